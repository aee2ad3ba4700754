"""Time to first audio at the client, per transport, against a real ``voxserve serve`` process.

Whole text: request sent → first audio byte received (HTTP chunked, WebSocket, gRPC server-streaming).
Incremental: first token sent → first audio received, tokens (words) sent every ``--token-ms`` over the
WebSocket and the gRPC bidirectional stream (HTTP has no incremental input).

    .venv/bin/python bench/server_ttfa.py --runs 10

``--busy`` keeps another caller listening to a long reading over a WebSocket of its own all the while,
so every first audio is measured while a stream plays.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import httpx
from websockets.sync.client import ClientConnection, connect

from voxserve.engines.cpus import usable_cores
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

TEXT = "Hello there, how can I help you today?"
VOICES = {"piper": "en_US-joe-medium", "kokoro": "af_heart"}
SERVER_TTFA_MS: list[float] = []  # the server's own first-text → first-chunk time, from `done` events


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tokens(text: str) -> list[str]:
    return re.findall(r"\S+\s*", text)


class Server:
    def __init__(self, engines: list[str]) -> None:
        self.port, self.grpc_port = free_port(), free_port()
        env = {**os.environ, "VOXSERVE_RATE_LIMIT_PER_MINUTE": "0", "VOXSERVE_ENGINES": json.dumps(engines)}
        command = [sys.executable, "-m", "voxserve", "serve", "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, "--grpc-port", str(self.grpc_port)], env=env, stderr=subprocess.DEVNULL
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 180
        while True:
            if self.process.poll() is not None:
                raise SystemExit("server exited during start-up")
            try:
                if httpx.get(self.base + "/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("server not ready after 180 s")
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


def http_whole(server: Server, client: httpx.Client, voice: str) -> float:
    body = {"input": TEXT, "voice": voice, "response_format": "pcm"}
    start = time.perf_counter()
    first = None
    with client.stream("POST", server.base + "/v1/audio/speech", json=body) as response:
        for piece in response.iter_raw():
            if piece and first is None:
                first = time.perf_counter() - start
    assert first is not None
    return first


def _ws_first_audio(ws: ClientConnection) -> float | None:
    """Drain one utterance; return when its first binary frame arrived (perf_counter)."""
    first = None
    while True:
        frame = ws.recv(timeout=60)
        if isinstance(frame, bytes):
            first = first or time.perf_counter()
        elif (message := json.loads(frame))["type"] == "done":
            SERVER_TTFA_MS.append(float(message["ttfa_ms"]))
            return first


def ws_run(ws: ClientConnection, token_ms: float | None) -> float:
    start = time.perf_counter()
    if token_ms is None:
        ws.send(json.dumps({"type": "text", "text": TEXT}))
    else:
        for i, token in enumerate(tokens(TEXT)):
            if i:
                time.sleep(token_ms / 1000.0)
            ws.send(json.dumps({"type": "text", "text": token}))
    ws.send(json.dumps({"type": "close"}))
    first = _ws_first_audio(ws)
    assert first is not None
    return first - start


def grpc_whole(stub: pb_grpc.VoxServeStub, voice: str) -> float:
    """Read the whole stream, as the other transports do: a call dropped after its first audio is still
    running on the server when the next one arrives, and admission may refuse that one."""
    start = time.perf_counter()
    first = None
    for chunk in stub.SynthesizeStream(pb.SynthesizeRequest(text=TEXT, voice=voice, format="pcm"), timeout=60):
        if chunk.audio and first is None:
            first = time.perf_counter() - start
    assert first is not None
    return first


def grpc_incremental(stub: pb_grpc.VoxServeStub, voice: str, token_ms: float) -> float:
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    sent_at: list[float] = []

    def requests() -> Iterator[pb.StreamRequest]:
        yield pb.StreamRequest(config=pb.StreamConfig(voice=voice, format="pcm"))
        while (item := outbox.get()) is not None:
            yield item

    responses = stub.StreamingSynthesize(requests(), timeout=60)
    assert next(responses).WhichOneof("kind") == "ready"
    for i, token in enumerate(tokens(TEXT)):
        if i:
            time.sleep(token_ms / 1000.0)
        else:
            sent_at.append(time.perf_counter())
        outbox.put(pb.StreamRequest(text=pb.TextFragment(text=token)))
    outbox.put(pb.StreamRequest(close=pb.CloseUtterance()))
    outbox.put(None)
    first = None
    for response in responses:
        if response.WhichOneof("kind") == "chunk" and response.chunk.audio and first is None:
            first = time.perf_counter()
        elif response.WhichOneof("kind") == "done":
            SERVER_TTFA_MS.append(response.done.ttfa_ms)
    assert first is not None
    return first - sent_at[0]


BUSY_TEXT = (
    "Streaming speech synthesis turns text into audio while the text is still arriving. The first words "
    "should be heard within a breath, and the rest should follow without gaps. A good server keeps up with "
    "many callers at once on modest hardware, and a new caller should not wait for the others."
)


def keep_reading(url: str, voice: str, stop: threading.Event) -> None:
    """Another caller: one long reading after another until ``stop`` (the server paces it to playback)."""
    with connect(url) as ws:
        ws.send(json.dumps({"type": "config", "voice": voice, "format": "pcm"}))
        ws.recv(timeout=10)
        while not stop.is_set():
            ws.send(json.dumps({"type": "text", "text": BUSY_TEXT}))
            ws.send(json.dumps({"type": "close"}))
            while True:
                frame = ws.recv(timeout=120)
                if isinstance(frame, str) and json.loads(frame)["type"] == "done":
                    break


def measure(runs: int, fn: Callable[[], float], warmup: int = 3) -> dict[str, float | None]:
    for _ in range(warmup):  # connection set-up, lazy paths, ONNX Runtime's per-shape first runs
        fn()
    SERVER_TTFA_MS.clear()
    values = sorted(fn() * 1000.0 for _ in range(runs))
    server = round(statistics.median(SERVER_TTFA_MS), 1) if SERVER_TTFA_MS else None
    return {
        "median_ms": round(statistics.median(values), 1),
        "p90_ms": round(values[min(len(values) - 1, int(0.9 * len(values)))], 1),
        "min_ms": round(values[0], 1),
        "server_median_ms": server,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--engines", default="piper,kokoro")
    parser.add_argument("--warmup", type=int, default=3, help="unmeasured runs before each case")
    parser.add_argument("--token-ms", type=float, default=30.0, help="spacing of incremental tokens")
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/server_ttfa[_busy].json")
    parser.add_argument("--busy", action="store_true", help="measure while another caller's reading plays")
    args = parser.parse_args()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    server = Server(engines)
    results: list[dict[str, object]] = []
    try:
        client = httpx.Client(timeout=60)
        stub = pb_grpc.VoxServeStub(grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}"))
        ws_url = f"ws://127.0.0.1:{server.port}/v1/tts/stream"
        for engine in engines:
            voice = VOICES[engine]
            stop = threading.Event()
            reader = threading.Thread(target=keep_reading, args=(ws_url, voice, stop), daemon=True)
            if args.busy:
                reader.start()
                time.sleep(3.0)  # the reading is now playing, its buffer full
            with connect(ws_url) as ws:
                ws.send(json.dumps({"type": "config", "voice": voice, "format": "pcm"}))
                ws.recv(timeout=10)
                cases: list[tuple[str, str, Callable[[], float]]] = [
                    ("http", "whole", lambda v=voice: http_whole(server, client, v)),  # type: ignore[misc]
                    ("ws", "whole", lambda w=ws: ws_run(w, None)),  # type: ignore[misc]
                    ("grpc", "whole", lambda v=voice: grpc_whole(stub, v)),  # type: ignore[misc]
                    ("ws", "incremental", lambda w=ws: ws_run(w, args.token_ms)),  # type: ignore[misc]
                    ("grpc", "incremental", lambda v=voice: grpc_incremental(stub, v, args.token_ms)),  # type: ignore[misc]
                ]
                for transport, mode, fn in cases:
                    row = {
                        "engine": engine,
                        "transport": transport,
                        "mode": mode,
                        **measure(args.runs, fn, args.warmup),
                    }
                    results.append(row)
                    median, p90, inside = row["median_ms"], row["p90_ms"], row["server_median_ms"]
                    print(
                        f"{engine:7} {transport:5} {mode:12} median {median:7.1f} ms  p90 {p90:7.1f} ms"
                        f"  (server-side {inside if inside is not None else '-'} ms)"
                    )
            stop.set()
            if args.busy:
                reader.join(60)
    finally:
        server.stop()
    out = args.out or Path(f"bench/results/server_ttfa{'_busy' if args.busy else ''}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"text": TEXT, "runs": args.runs, "token_ms": args.token_ms, "cores": usable_cores(), "busy": args.busy}
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
