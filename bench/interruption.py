"""Interruption round trip on one protocol-2 WebSocket, against a real ``voxserve serve`` process.

Each run: context A speaks a long answer; once A has sent ``--after`` seconds of audio the client
cancels A and at once sends context B's first text. Measured at the client:

- cancel → last chunk of A (0 when no chunk of A came after the cancel), and cancel → A's ``done``;
- B's first text → B's first audio frame;
- for comparison, context C's first text → first audio on the same socket with nothing else playing.

    .venv/bin/python -m bench.interruption --engines piper --voice en_US-joe-medium --runs 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from websockets.sync.client import ClientConnection, connect

from bench.server_ttfa import Server

ANSWER = (
    "Let me walk you through the whole plan. First we look at the numbers for last quarter, "
    "then we compare them with the forecast, and finally we decide what to change next month."
)
FOLLOW_UP = "Sure, let's talk about that instead."


def one_run(ws: ClientConnection, run: int, after_s: float) -> tuple[float, float, float, float]:
    a, b = f"a{run}", f"b{run}"
    ws.send(json.dumps({"type": "text", "context_id": a, "text": ANSWER}))
    ws.send(json.dumps({"type": "flush", "context_id": a}))
    heard = 0.0
    while heard < after_s:
        message = json.loads(ws.recv(timeout=60))
        if message["type"] == "chunk":
            ws.recv(timeout=60)
            heard += message["duration_s"]
    cancelled = time.perf_counter()
    ws.send(json.dumps({"type": "cancel", "context_id": a}))
    b_text = time.perf_counter()
    ws.send(json.dumps({"type": "text", "context_id": b, "text": FOLLOW_UP}))
    ws.send(json.dumps({"type": "close", "context_id": b}))
    last_a = cancelled
    a_done = b_first = None
    b_done = False
    while a_done is None or b_first is None:
        message = json.loads(ws.recv(timeout=60))
        now = time.perf_counter()
        if message["type"] == "chunk":
            ws.recv(timeout=60)
            if message["context_id"] == a:
                last_a = now
            elif b_first is None:
                b_first = now
        elif message["type"] == "done":
            if message["context_id"] == a:
                a_done = now
            else:
                b_done = True
    if not b_done:
        drain_until_done(ws, b)
    c = f"c{run}"
    c_text = time.perf_counter()
    ws.send(json.dumps({"type": "text", "context_id": c, "text": FOLLOW_UP}))
    ws.send(json.dumps({"type": "close", "context_id": c}))
    while not isinstance(ws.recv(timeout=60), bytes):
        pass
    c_first = time.perf_counter()
    drain_until_done(ws, c)
    ms = [last_a - cancelled, a_done - cancelled, b_first - b_text, c_first - c_text]
    return tuple(round(value * 1000, 1) for value in ms)  # type: ignore[return-value]


def drain_until_done(ws: ClientConnection, context: str) -> None:
    while True:
        frame = ws.recv(timeout=60)
        if isinstance(frame, str):
            message = json.loads(frame)
            if message["type"] == "done" and message["context_id"] == context:
                return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engines", nargs="+", default=["piper"])
    parser.add_argument("--voice", default="en_US-joe-medium")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--after", type=float, default=1.0, help="seconds of A's audio before the cancel")
    args = parser.parse_args()
    server = Server(args.engines)
    try:
        with connect(f"ws://127.0.0.1:{server.port}/v1/tts/stream", max_size=None) as ws:
            ws.send(json.dumps({"type": "config", "protocol": 2, "voice": args.voice, "format": "pcm"}))
            json.loads(ws.recv(timeout=60))
            results = [one_run(ws, run, args.after) for run in range(args.runs + 1)][1:]  # the first warms up
    finally:
        server.stop()
    names = (
        "cancel_to_last_a_chunk_ms",
        "cancel_to_a_done_ms",
        "b_text_to_b_first_audio_ms",
        "alone_text_to_first_audio_ms",
    )
    report = {
        name: {"median": round(statistics.median(values), 1), "max": round(max(values), 1)}
        for name, values in zip(names, zip(*results, strict=True), strict=True)
    }
    print(json.dumps({"voice": args.voice, "runs": args.runs, **report}, indent=1))


if __name__ == "__main__":
    main()
