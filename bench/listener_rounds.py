"""The load of ``tests/server/test_kokoro_listeners.py``, repeated: rounds of listeners over HTTP arriving a
fixed gap apart against one server, with admission, and what each listener got.

    .venv/bin/python -m bench.listener_rounds --voice af_heart --listeners 3 --gap 0.5 --rounds 12

The server runs in this process with default settings but the rate limit (``bench/in_process.py``). Each
listener asks for :data:`bench.arrival_trace.REPLY` as a server-sent event stream; per round, each one's
status (503: refused by admission), the seconds the server counted it would have waited playing from its
first audio (``stall_s`` of ``speech.audio.done``), and its first audio from its request (ms). The first
round meets a fresh server, as the test does when it runs alone; later ones meet a server whose core
meter has learned from the rounds before, as the test does inside its tier. At the end, over the rounds
after the first: per arrival (the first listener, the second, ...), how many were admitted and stalled,
and their first audio's median and largest.

CI runs the test inside its tier, after other tests' lone requests taught the server's core meter and
playing margin. ``--fresh --warm 6`` replays that: a fresh server for every round, six lone short
requests before its listeners, and every round counted:

    .venv/bin/python -m bench.listener_rounds --listeners 3 --rounds 10 --fresh --warm 6
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx

from bench.arrival_trace import REPLY
from bench.in_process import start_server

Answer = tuple[int, float | None, float | None]  # status, stall seconds, first audio seconds
WARM = ("Hello there.", "The quick brown fox jumps over the lazy dog.", "How are you today? I am fine, thank you.")


async def _listen(client: httpx.AsyncClient, url: str, voice: str, delay: float) -> Answer:
    await asyncio.sleep(delay)
    body = {"input": REPLY, "voice": voice, "response_format": "pcm", "stream_format": "sse"}
    started, first = time.monotonic(), None
    async with client.stream("POST", url, json=body, timeout=120) as response:
        if response.status_code != 200:
            await response.aread()
            return response.status_code, None, None
        stall = None
        async for line in response.aiter_lines():
            if first is None and "speech.audio.delta" in line:
                first = time.monotonic() - started
            if line.startswith("data: ") and "speech.audio.done" in line:
                stall = float(json.loads(line[6:])["stall_s"])
        return response.status_code, stall, first


async def _round(client: httpx.AsyncClient, url: str, args: argparse.Namespace) -> list[Answer]:
    """One round: ``--warm`` lone short requests one after another, then the listeners."""
    for n in range(args.warm):
        body = {"input": WARM[n % len(WARM)], "voice": args.voice, "response_format": "pcm"}
        (await client.post(url, json=body, timeout=120)).raise_for_status()
    return list(await asyncio.gather(*(_listen(client, url, args.voice, n * args.gap) for n in range(args.listeners))))


async def _rounds(args: argparse.Namespace) -> None:
    url = f"http://127.0.0.1:{args.port}/v1/audio/speech"
    counted: list[list[Answer]] = [[] for _ in range(args.listeners)]
    served = None
    try:
        async with httpx.AsyncClient() as client:
            for number in range(args.rounds):
                if served is None or args.fresh:
                    if served is not None:
                        served.stop()
                    served = start_server(args.port)
                answers = await _round(client, url, args)
                cells = [
                    f"{status}" if status != 200 else f"stall {stall:.3f} s, first {1000 * (first or 0):.0f} ms"
                    for status, stall, first in answers
                ]
                print(f"round {number}: " + " | ".join(cells), flush=True)
                if number or args.fresh:
                    for arrival, answer in zip(counted, answers, strict=True):
                        arrival.append(answer)
                await asyncio.sleep(args.pause)
    finally:
        if served is not None:
            served.stop()
    rounds = "every round" if args.fresh else "after the first round"
    print(f"{rounds}, per arrival: admitted, stalled (s), first audio median and max (ms)")
    for number, answers in enumerate(counted, 1):
        admitted = [(stall or 0.0, first) for status, stall, first in answers if status == 200]
        stalls = [stall for stall, _ in admitted if stall > 0]
        firsts = [first for _, first in admitted if first is not None]
        spread = f"{1000 * statistics.median(firsts):.0f} / {1000 * max(firsts):.0f}" if firsts else "-"
        shown = f"{len(stalls)} ({sum(stalls):.2f} s)"
        print(f"  listener {number}: {len(admitted)} of {len(answers)} admitted, stalled {shown}, first {spread}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--listeners", type=int, default=3)
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between the listeners' arrivals")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--pause", type=float, default=2.0, help="seconds between rounds")
    parser.add_argument("--port", type=int, default=18500)
    parser.add_argument(
        "--warm", type=int, default=0, help="lone short requests before each round (as the tests before it in a tier)"
    )
    parser.add_argument("--fresh", action="store_true", help="a fresh server for each round (each one counted)")
    asyncio.run(_rounds(parser.parse_args()))


if __name__ == "__main__":
    main()
