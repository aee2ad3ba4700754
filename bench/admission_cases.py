"""Two admission cases, old tree against new, a fresh server per round: what a new replica's first long
stream lets in beside it, and whether a client that pauses its text is counted as a stall.

    git worktree add /tmp/old <commit>
    .venv/bin/python -m bench.admission_cases --old /tmp/old --rounds 2

*First stream.* A fresh server gets one Kokoro stream over the WebSocket (``--sentences`` sentences sent
at once, about 2.5 s of speech each). At each of ``--probes`` seconds after it starts, one short Piper
request over HTTP: admitted (200) or refused (503), with the server's ``voxserve_load`` just before.

*Text pauses.* On the same server, once that stream has ended: a Kokoro stream A (four sentences sent at
once) and, 0.5 s later, a Piper stream B whose three sentences come ``--gap`` seconds apart, each flushed
(a voice agent's LLM pausing longer than the audio it has had; Piper, so that two Kokoro streams need
not fit). Printed: the ``stalls`` and ``stall_s`` of B's and A's ``done`` events, then the server's
stalled-stream count and admission limit.

Rounds alternate the trees (A B B A ...); one server runs at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

from bench.compare_trees import ROOT, metric_sum, prepare_tree, serve_tree

SENTENCE = "The quick brown fox jumps over the lazy dog. "
PAUSED = ["Hello there, how are you?", "I was waiting for the language model.", "And here is the last bit."]


async def _stream(port: int, parts: list[str], gap_s: float, voice: str = "af_heart") -> dict[str, Any]:
    """One utterance over the WebSocket: ``parts`` sent ``gap_s`` apart, each flushed; its ``done`` (or
    its ``error`` event, or the close that refused it)."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/v1/tts/stream", max_size=None) as ws:
        await ws.send(json.dumps({"type": "config", "voice": voice, "format": "pcm"}))

        async def done() -> dict[str, Any]:
            try:
                async for message in ws:
                    if isinstance(message, str) and (event := json.loads(message))["type"] in ("done", "error"):
                        return dict(event)
            except websockets.ConnectionClosed as closed:
                return {"refused": f"close {closed.rcvd.code if closed.rcvd else '?'}"}
            raise RuntimeError("the connection closed before done")

        reading = asyncio.create_task(done())
        try:
            for n, part in enumerate(parts):
                if n:
                    await asyncio.sleep(gap_s)
                await ws.send(json.dumps({"type": "text", "text": part}))
                await ws.send(json.dumps({"type": "flush"}))
            await ws.send(json.dumps({"type": "close"}))
        except websockets.ConnectionClosed:
            pass  # refused: the reader says how
        return await reading


def _stalls(done: dict[str, Any]) -> str:
    if "refused" in done or done.get("type") == "error":
        return f"refused ({done.get('refused') or done.get('code')})"
    return f"{done.get('stalls', '?')} stalls, {done.get('stall_s', '?')} s"


async def _first_stream(port: int, sentences: int, probes: list[float]) -> None:
    first = asyncio.create_task(_stream(port, [SENTENCE * sentences], 0.0))
    start = time.monotonic()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        for at in probes:
            await asyncio.sleep(max(0.0, start + at - time.monotonic()))
            load = await asyncio.to_thread(metric_sum, port, "voxserve_load")
            reply = await client.post(
                "/v1/audio/speech",
                json={"input": "Just a short line.", "voice": "en_US-joe-medium", "response_format": "pcm"},
            )
            print(f"  first stream, probe at {at:4.1f} s: load {load} -> Piper {reply.status_code}", flush=True)
    print(f"  first stream done: {_stalls(await first)}", flush=True)


async def _text_pauses(port: int, gap_s: float) -> None:
    steady = asyncio.create_task(_stream(port, [SENTENCE * 4], 0.0))
    await asyncio.sleep(0.5)
    paused = await _stream(port, PAUSED, gap_s, voice="en_US-joe-medium")
    print(f"  text pauses: paused stream {_stalls(paused)}; beside it {_stalls(await steady)}", flush=True)
    stalled = metric_sum(port, "voxserve_stalled_streams_total")
    limit = metric_sum(port, "voxserve_admission_limit")
    print(f"  then the server counts {stalled} stalled streams, admission limit {limit}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, required=True, help="the other source tree (a git worktree)")
    parser.add_argument("--new", type=Path, default=ROOT, help="this tree by default")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sentences", type=int, default=6)
    parser.add_argument("--probes", default="1,3,5,8", help="seconds into the first stream")
    parser.add_argument("--gap", type=float, default=4.0, help="seconds between the paused stream's sentences")
    parser.add_argument("--port", type=int, default=18790)
    args = parser.parse_args()
    probes = [float(p) for p in args.probes.split(",")]
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for tree in trees.values():
        prepare_tree(tree)
    order = [name for r in range(args.rounds) for name in (("old", "new") if r % 2 == 0 else ("new", "old"))]
    for n, name in enumerate(order):
        print(f"round {n}: {name} ({trees[name]})", flush=True)
        server = serve_tree(trees[name], args.port, {"VOXSERVE_RATE_LIMIT_PER_MINUTE": "0"})
        try:
            asyncio.run(_first_stream(args.port, args.sentences, probes))
            asyncio.run(_text_pauses(args.port, args.gap))
        finally:
            server.terminate()
            server.wait(30)


if __name__ == "__main__":
    main()
