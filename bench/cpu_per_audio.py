"""What a real-time stream costs this machine, against what admission books it at.

Admission books each stream at its engine's *share* (:meth:`voxserve.runtime.Runtime.stream_share`):
the cores a real-time stream keeps busy by the decoder window cost learned here, at the largest paced
window, over the cores. This runs ``--listeners`` real-time sessions of the issue-15 reply in one
process, arriving ``--gap`` seconds apart, and reads the process's CPU time around them: the CPU
seconds spent per audio second delivered (fronts, encoders, windows at the sizes really planned, and
the sessions' Python) against the cores per stream the share assumed, before and after the run.

    .venv/bin/python -m bench.cpu_per_audio --voice en_US-joe-medium --listeners 8 --gap 0.1 [--rounds 3]

A ratio above 1 means admission books streams below their cost: the booked load reaches 1.0 after
the cores are full. The sessions are not held to real time (they decode ahead as the planner allows),
so the CPU is that of the audio however fast it comes; each listener's stalls are counted as the
server counts them (:class:`~voxserve.stream.playback.PlaybackClock`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from bench.arrival_trace import listen
from voxserve.engines.cpus import usable_cores
from voxserve.runtime import Runtime
from voxserve.settings import Settings


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


async def _main(voice: str, listeners: int, gap: float, rounds: int) -> None:
    runtime = Runtime(Settings(_env_file=None))
    runtime.load(warm=True)
    cores = usable_cores()
    engine = runtime.engine_for(voice).name
    try:
        ratios = []
        for number in range(rounds):
            share = runtime.stream_share(engine)
            if share is None:
                raise SystemExit(f"{engine} learned no window cost (a GPU, or a whole-model engine)")
            cpu, started = _cpu_s(), time.monotonic()
            clocks = await asyncio.gather(*(listen(runtime, voice, n * gap) for n in range(listeners)))
            cpu, wall = _cpu_s() - cpu, time.monotonic() - started
            audio = sum(c.audio_s for c in clocks)
            booked = share * cores
            ratios.append(cpu / audio / booked)
            stalls = sum(len(c.stalls) for c in clocks)
            print(
                f"round {number}: {listeners} x {voice}, {audio:.1f} s of audio in {wall:.1f} s, CPU {cpu:.1f} s: "
                f"{cpu / audio:.4f} core-s per audio s; booked {booked:.4f} (share {share:.4f}), "
                f"after {(runtime.stream_share(engine) or 0) * cores:.4f}; ratio {ratios[-1]:.2f}; "
                f"core factor {getattr(runtime, 'core_factor', 1.0):.2f}; "
                f"stalls {stalls} ({sum(c.stall_s for c in clocks):.2f} s)",
                flush=True,
            )
        print(f"median ratio of CPU spent to CPU booked: {statistics.median(ratios):.2f} ({cores} cores)")
    finally:
        runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="en_US-joe-medium")
    parser.add_argument("--listeners", type=int, default=8)
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between arrivals")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(_main(args.voice, args.listeners, args.gap, args.rounds))


if __name__ == "__main__":
    main()
