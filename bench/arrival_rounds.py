"""How often does a caller arriving while another plays make it run dry? Rounds of real-time listeners on
the real models, in one process, each round's callers arriving at random gaps; the stalls of each round
and how many rounds had any.

    .venv/bin/python -m bench.arrival_rounds --voice af_heart --listeners 2 --rounds 12

Each listener plays :data:`bench.arrival_trace.REPLY` from its first audio in real time, as the server
counts stalls (:class:`~voxserve.stream.playback.PlaybackClock`). Sessions are opened on the runtime
directly, without admission: this measures the scheduler's ordering for the callers a server admitted
(``bench/arrival_trace`` shows one such arrival chunk by chunk). A lone listener plays first, so that
the core meter has its sample, as on a server that has been serving. The gaps come from ``--seed``, so
two trees see the same arrivals.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from bench.arrival_trace import listen
from voxserve.runtime import Runtime
from voxserve.settings import Settings


async def _rounds(voice: str, listeners: int, rounds: int, gaps: tuple[float, float], seed: int) -> None:
    runtime = Runtime(Settings(_env_file=None))
    runtime.load(warm=True)
    rng = random.Random(seed)
    stalled = 0
    try:
        await listen(runtime, voice, 0.0)
        for number in range(rounds):
            delays = [0.0]
            for _ in range(listeners - 1):
                delays.append(delays[-1] + rng.uniform(*gaps))
            t0 = time.monotonic()
            clocks = await asyncio.gather(*(listen(runtime, voice, delay) for delay in delays))
            firsts = [f"{(c.first_at or t0) - t0 - d:.2f}" for c, d in zip(clocks, delays, strict=True)]
            stalls = [f"S{n} {s.wait_s:.3f} s at {s.at_s:.2f} s" for n, c in enumerate(clocks) for s in c.stalls]
            stalled += bool(stalls)
            arrivals, first = ", ".join(f"{d:.2f}" for d in delays), ", ".join(firsts)
            print(f"round {number}: arrivals {arrivals} s; first audio {first} s; stalls: {stalls or 'none'}")
    finally:
        runtime.close()
    print(f"rounds with a stall: {stalled} of {rounds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--listeners", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--min-gap", type=float, default=0.1, help="shortest seconds between two arrivals")
    parser.add_argument("--max-gap", type=float, default=1.0, help="longest seconds between two arrivals")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    asyncio.run(_rounds(args.voice, args.listeners, args.rounds, (args.min_gap, args.max_gap), args.seed))


if __name__ == "__main__":
    main()
