"""``voxserve serve`` as a real process: SIGTERM drains (readyz 503, new work refused, streams ended in grace)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import grpc
import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

from .support import PIPER, ServerMaker, free_port
from .test_ws import send

pytestmark = pytest.mark.alone  # drains are timed against the grace period


def assert_told_shutting_down(ws: ClientConnection) -> None:
    """The rest of a cut WebSocket stream ends with a ``shutting_down`` error event and close 1001."""
    events = []
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            frame = ws.recv(timeout=10)
            if isinstance(frame, str):
                events.append(json.loads(frame))
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    assert events[-1]["type"] == "error" and events[-1]["code"] == "shutting_down", events[-1]


def test_sigterm_drains_within_grace(model_store: object) -> None:
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "VOXSERVE_DEFAULT_VOICE": PIPER,
        "VOXSERVE_SHUTDOWN_GRACE_S": "2",
        "VOXSERVE_RATE_LIMIT_PER_MINUTE": "0",
    }
    command = [sys.executable, "-m", "voxserve", "serve", "--port", str(port), "--grpc-port", str(grpc_port)]
    process = subprocess.Popen([*command, "--engines", "piper"], env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                if httpx.get(base + "/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline
            time.sleep(0.2)

        received = bytearray()
        first = threading.Event()
        ended = threading.Event()
        text = " ".join(["A long answer that is still being spoken when the server is told to stop."] * 30)

        def listen() -> None:
            body = {"input": text, "voice": PIPER, "response_format": "pcm"}
            with httpx.stream("POST", base + "/v1/audio/speech", json=body, timeout=30) as response:
                try:
                    for piece in response.iter_raw():
                        received.extend(piece)
                        first.set()
                except httpx.RemoteProtocolError:  # cut: the chunked body never ends, so it reads as cut
                    ended.set()

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        ws = connect(f"ws://127.0.0.1:{port}/v1/tts/stream")
        send(ws, type="config", voice=PIPER, format="pcm")
        send(ws, type="text", text=text)  # paced: still playing at the end of the grace period
        send(ws, type="close")
        channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        call = pb_grpc.VoxServeStub(channel).SynthesizeStream(pb.SynthesizeRequest(text=text * 2, voice=PIPER))
        next(call)
        assert first.wait(20)
        stopped_at = time.monotonic()
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert httpx.get(base + "/readyz").status_code == 503
        refused = httpx.post(base + "/v1/audio/speech", json={"input": "Hello.", "voice": PIPER})
        assert refused.status_code == 503 and "shutting down" in refused.json()["error"]["message"]
        assert ended.wait(10), "in-flight stream not ended by the grace period"
        # the streams cut at the end of the grace period are told why
        assert_told_shutting_down(ws)
        with pytest.raises(grpc.RpcError) as failed:
            for _ in call:
                pass
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE  # retryable: another replica takes it
        trailers = dict(failed.value.trailing_metadata() or ())
        assert trailers.get("voxserve-error-code") == "shutting_down", failed.value
        assert process.wait(10) == 0
        elapsed = time.monotonic() - stopped_at
        assert 1.5 < elapsed < 6, elapsed  # waited for the stream about the grace period, not forever
        assert len(received) / 2 / 24000 < 60  # it was cut short, not played to the end
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_drain_ends_only_once_cut_clients_were_told(make_server: ServerMaker) -> None:
    """The drain is what tells the web server it may close every connection (uvicorn closes the
    WebSockets left with 1012). So when it returns, a cut stream's client must already have its
    error event and the 1001 close: closing every connection at that instant loses neither."""
    server = make_server(shutdown_grace_s=0.3)
    ws = connect(server.ws)
    send(ws, type="config", voice=PIPER, format="pcm")
    send(ws, type="text", text=" ".join(["A long answer still being spoken when the server stops."] * 20))
    send(ws, type="close")
    while not isinstance(ws.recv(timeout=20), bytes):  # audio is flowing
        pass
    loop = server.server.servers[0].get_loop()

    async def drain_then_close_everything() -> None:
        await server.state.drain()
        for connection in list(server.server.server_state.connections):
            connection.shutdown()  # what uvicorn does next

    asyncio.run_coroutine_threadsafe(drain_then_close_everything(), loop).result(10)
    assert_told_shutting_down(ws)
