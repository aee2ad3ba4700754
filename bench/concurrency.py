"""Concurrent real-time streams on this machine: does every stream keep ahead of playback?

Starts N sessions at once on one Runtime (the server's configuration: one worker pool, earliest
deadline first), each speaking a ~15 s paragraph paced like a real listener (lookahead on). A stream
underruns when a chunk arrives after playback (which starts at its first chunk) needed it. Reports,
per N: median time to first audio, underrun count and total stall time, aggregate audio/wall.
``--stagger S`` starts stream k after k*S seconds (callers rarely arrive in the same instant; 0 is
the worst case).

    .venv/bin/python -m bench.concurrency --engine kokoro --streams 1,2,3 [--stagger 1.0] [--repeat 5]

``--repeat N`` runs each level N times and adds a summary row: medians, and how many runs had no
underrun at all. ``--no-elastic`` makes concurrent streams take turns on all cores instead of sharing
them (the setup before elastic sessions), for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.tuning import Tuning
from voxserve.types import SynthesisParams

TEXT = (
    "Streaming speech synthesis turns text into audio while the text is still arriving. "
    "The first words should be heard within a breath, and the rest should follow without gaps. "
    "A good server keeps up with many callers at once on modest hardware."
)
VERBOSE = False
VOICES = {"kokoro": "af_heart", "piper": "en_US-joe-medium"}


async def one_stream(runtime: Runtime, voice: str, delay: float = 0.0, name: str = "") -> dict[str, float]:
    await asyncio.sleep(delay)
    t0 = time.monotonic()
    session = runtime.open_session(SynthesisParams(voice=voice), pace=True)
    session.push_text(TEXT)
    session.close()
    first: float | None = None
    stall = 0.0  # playback clock is pushed back by every stall
    underruns = 0
    async for chunk in session:
        now = time.monotonic()
        if not len(chunk.samples):
            continue
        if first is None:
            first = now
            continue
        due = first + stall + chunk.start_s
        if now > due + 0.005:
            underruns += 1
            stall += now - due
            if VERBOSE:
                print(f"  {name}stall of {now - due:.3f} s before audio at {chunk.start_s:.2f} s", flush=True)
    return {"ttfa_s": (first or t0) - t0, "underruns": underruns, "stall_s": stall, "audio_s": session.stats.audio_s}


async def run_level(runtime: Runtime, voice: str, streams: int, stagger: float = 0.0) -> dict[str, float]:
    t0, stopped = time.monotonic(), runtime.pool.preemptions
    results = await asyncio.gather(*(one_stream(runtime, voice, k * stagger, f"stream {k}: ") for k in range(streams)))
    wall = time.monotonic() - t0
    return {
        "streams": streams,
        "stagger_s": stagger,
        "ttfa_median_ms": statistics.median(r["ttfa_s"] for r in results) * 1000,
        "ttfa_max_ms": max(r["ttfa_s"] for r in results) * 1000,
        "underruns": sum(r["underruns"] for r in results),
        "stall_s": sum(r["stall_s"] for r in results),
        "audio_per_wall": sum(r["audio_s"] for r in results) / wall,
        "preemptions": runtime.pool.preemptions - stopped,
    }


def summary(rows: list[dict[str, float]]) -> dict[str, float]:
    """Medians over repeated runs of one level, and how many runs had no underrun."""
    med = statistics.median
    return {
        "streams": rows[0]["streams"],
        "stagger_s": rows[0]["stagger_s"],
        "runs": len(rows),
        "runs_without_underrun": sum(1 for r in rows if r["underruns"] == 0),
        "ttfa_median_ms": med(r["ttfa_median_ms"] for r in rows),
        "ttfa_max_ms_median": med(r["ttfa_max_ms"] for r in rows),
        "underruns_median": med(r["underruns"] for r in rows),
        "stall_s_median": med(r["stall_s"] for r in rows),
        "stall_s_max": max(r["stall_s"] for r in rows),
        "audio_per_wall": med(r["audio_per_wall"] for r in rows),
        "preemptions": sum(r["preemptions"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", default="kokoro", choices=sorted(VOICES))
    parser.add_argument("--streams", default="1,2,3")
    parser.add_argument("--mode", default="windowed", choices=["windowed", "sentence"])
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between stream starts")
    parser.add_argument("--verbose", action="store_true", help="print each stall")
    parser.add_argument("--repeat", type=int, default=1, help="runs per level (a summary row when > 1)")
    parser.add_argument("--no-elastic", action="store_true", help="streams take turns on all cores")
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    settings = Settings(_env_file=None, engines=[args.engine], intra_op_threads=args.threads)
    tuning = Tuning(decode_mode=args.mode, elastic_threads=not args.no_elastic)
    runtime = Runtime(settings, tuning)
    runtime.load(warm=True)
    try:
        for n in (int(x) for x in args.streams.split(",")):
            rows = []
            for _ in range(args.repeat):
                rows.append(asyncio.run(run_level(runtime, VOICES[args.engine], n, args.stagger)))
                print(json.dumps({"engine": args.engine, "mode": args.mode, **rows[-1]}), flush=True)
            if args.repeat > 1:
                print(json.dumps({"engine": args.engine, "mode": args.mode, **summary(rows)}), flush=True)
    finally:
        runtime.close()


if __name__ == "__main__":
    main()
