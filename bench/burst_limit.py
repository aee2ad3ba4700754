"""What one burst of callers beyond capacity leaves the admission limit at, and how many heavier callers
fit afterwards.

A fresh server (``bench/in_process.py``, default settings but the rate limit) first serves one lone
Kokoro caller (so that its core meter has measured a stream), then ``--before`` Kokoro callers at once,
then ``--burst`` Piper callers at once (far more than its cores feed), then the Kokoro callers again.
Every caller asks for :data:`bench.arrival_trace.REPLY` over HTTP as a server-sent event stream. Per
wave: how many were refused (503), the stall seconds the server counted for the ones served, and the
admission limit after it (``voxserve_admission_limit``). A burst beyond capacity may lower the limit,
but once: the Kokoro callers admitted before it should fit after it too.

    .venv/bin/python -m bench.burst_limit --rounds 2

The old tree runs the same way with ``PYTHONPATH=/tmp/old/src:.`` (see ``docs/benchmarks.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import json

import httpx

from bench.arrival_trace import REPLY
from bench.in_process import start_server

Answer = tuple[int, float]  # status, stall seconds the server counted (0 when refused)


async def _call(client: httpx.AsyncClient, url: str, voice: str) -> Answer:
    body = {"input": REPLY, "voice": voice, "response_format": "pcm", "stream_format": "sse"}
    async with client.stream("POST", url, json=body, timeout=180) as response:
        if response.status_code != 200:
            await response.aread()
            return response.status_code, 0.0
        stall = 0.0
        async for line in response.aiter_lines():
            if line.startswith("data: ") and "speech.audio.done" in line:
                stall = float(json.loads(line[6:])["stall_s"])
        return response.status_code, stall


async def _wave(client: httpx.AsyncClient, url: str, voice: str, callers: int, state: object) -> str:
    answers = await asyncio.gather(*(_call(client, url, voice) for _ in range(callers)))
    refused = sum(status != 200 for status, _ in answers)
    stalls = [round(stall, 2) for status, stall in answers if status == 200 and stall > 0]
    admission = state.admission  # type: ignore[attr-defined]
    return f"{voice} x{callers}: refused {refused}, stalls {stalls or 'none'}, limit after {admission.limit:.3f}"


async def _rounds(args: argparse.Namespace) -> None:
    url = f"http://127.0.0.1:{args.port}/v1/audio/speech"
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=None)) as client:
        for number in range(args.rounds):
            served = start_server(args.port)
            try:
                await _wave(client, url, args.heavy, 1, served.state)
                waves = [
                    await _wave(client, url, args.heavy, args.before, served.state),
                    await _wave(client, url, args.light, args.burst, served.state),
                    await _wave(client, url, args.heavy, args.before, served.state),
                ]
            finally:
                served.stop()
            print(f"round {number}: " + " | ".join(waves), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--heavy", default="af_heart", help="the voice of the callers before and after")
    parser.add_argument("--light", default="en_US-joe-medium", help="the voice of the burst")
    parser.add_argument("--before", type=int, default=4, help="callers at once before and after the burst")
    parser.add_argument("--burst", type=int, default=30, help="callers at once in the burst")
    parser.add_argument("--rounds", type=int, default=2, help="each on a fresh server")
    parser.add_argument("--port", type=int, default=18540)
    asyncio.run(_rounds(parser.parse_args()))


if __name__ == "__main__":
    main()
