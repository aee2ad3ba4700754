"""What the worker pool's scheduling decisions cost, against the streams it serves: microseconds of one
decision at N streams, in this tree and (``--old TREE``) in another one, measured in the same run.

Every decision runs under the pool's lock, and a stream's ``spare`` (what the pool reads to find thin
streams) asks the pool for that stream's share in turn, so a decision that reads every stream's spare
afresh at each of its steps grows with the square of the streams. The streams here are synthetic,
with the shape of the server's: each needs a learned cost's seconds per audio second (``--mixed``:
half of them a tenth of the others, as Piper beside Kokoro), its spare asks the pool for its share
as a window planner does, a third of them are thin, and ``--first`` of them have their first audio
queued (a burst of newcomers; 0: a steady load) while the others' next windows are queued. No model
runs; the numbers are the scheduler's own CPU time.

    .venv/bin/python -m bench.decision_cost --streams 8,16,32,64 --first 0,4 --old /tmp/old

Decisions timed: ``share`` (a planner sizing a window), ``hold_limit`` and ``crowded`` (the same),
``ready`` (a worker picking a job) and ``threads`` (the threads it starts with). Each cell is the
median of ``--batches`` batches' mean.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voxserve.stream.jobs import ActiveStream, Job
from voxserve.stream.sharing import CoreSharing

DECISIONS = ("share", "hold_limit", "crowded", "ready", "threads")


def _stream(sharing: CoreSharing, index: int, mixed: bool, now: float, new: bool) -> ActiveStream:
    """A stream like a window planner's: its need from a cost of ``a`` per window and ``b`` per audio
    second at one thread, its spare from its lead less what its share of the cores asks for (``new``:
    before its first audio, all it needs)."""
    light = mixed and index % 2 == 1
    a, b = (0.03, 0.07) if light or not mixed else (0.3, 0.7)
    lead = 0.3 + 0.4 * (index % 3)  # every third stream is thin

    def need(threads: int) -> float | None:
        return (b + a / 2.0) / threads**0.8

    def spare() -> float:
        _, load = sharing.share(True, need(1))
        return float("inf") if new else lead - 0.5 * min(1.0, load / 4)

    return ActiveStream(lambda: now + lead, spare, need)


def build(streams: int, first: int, mixed: bool, cores: int) -> tuple[CoreSharing, list[ActiveStream], Job]:
    """A pool of ``cores`` shared cores with ``streams`` streams, ``first`` of them with their first
    audio queued, the others' next window queued; returns it, its streams and a queued playing job."""
    sharing = CoreSharing(cores, tuple(n for n in (8, 4, 2, 1) if n <= cores))
    loop = asyncio.new_event_loop()
    now = time.monotonic()
    seq = itertools.count()
    entries = [_stream(sharing, i, mixed, now, i < first) for i in range(streams)]
    sharing._streams.extend(entries)
    playing: Job | None = None
    for i, entry in enumerate(entries):
        due = now + (0.0 if i < first else 0.3 + 0.4 * (i % 3))
        job = Job(due - 0.2 if i >= first else due, next(seq), lambda: None, loop, loop.create_future(), due, 0.2)
        job.stream, job.first = entry, i < first
        sharing._heap.append(job)
        playing = playing if i < first or playing is not None else job
    sharing._heap.sort()
    assert playing is not None, "at least one stream must be playing"
    return sharing, entries, playing


def _decision(name: str, sharing: CoreSharing, entries: list[ActiveStream], job: Job) -> Callable[[], Any]:
    """One call of the decision ``name`` on ``sharing`` (see the module docstring)."""
    if name == "share":
        need = entries[-1].needs()
        return lambda: sharing.share(False, need)
    if name == "hold_limit":
        return lambda: sharing.hold_limit(entries[-1], 1)
    if name == "crowded":
        return lambda: sharing.crowded(1)
    inner: Callable[[], Any] = sharing._ready if name == "ready" else lambda: sharing._threads_for(job, False)

    def locked() -> Any:
        with sharing._cond:
            return inner()

    return locked


def measure(streams: int, first: int, mixed: bool, cores: int, batches: int, calls: int) -> dict[str, float]:
    """Microseconds per decision, median of ``batches`` batches of ``calls``, each on a pool built
    afresh: jobs and deadlines are set against the clock, and a batch must find them as built."""
    result = {}
    for name in DECISIONS:
        means = []
        for _ in range(batches):
            decide = _decision(name, *build(streams, first, mixed, cores))
            started = time.process_time()
            for _ in range(calls):
                decide()
            means.append((time.process_time() - started) / calls * 1e6)
        result[name] = statistics.median(means)
    return result


def run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    table = {}
    for streams in (int(n) for n in args.streams.split(",")):
        for first in (int(n) for n in args.first.split(",")):
            if first < streams:
                table[f"{streams}:{first}"] = measure(streams, first, args.mixed, args.cores, args.batches, args.calls)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", default="8,16,32,64")
    parser.add_argument("--first", default="0,4", help="streams whose first audio is queued")
    parser.add_argument("--mixed", action="store_true", help="half the streams need a tenth of the others")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--old", help="another tree (its src/ is imported in a subprocess)")
    parser.add_argument("--json", action="store_true", help="print the table as JSON only")
    args = parser.parse_args()
    new = run(args)
    if args.json:
        print(json.dumps(new))
        return
    old: dict[str, dict[str, float]] = {}
    if args.old:
        command = [sys.executable, "-m", "bench.decision_cost", "--json", *sys.argv[1:]]
        command.remove("--old")
        command.remove(args.old)
        root = Path(__file__).resolve().parent.parent
        env = {**os.environ, "PYTHONPATH": f"{Path(args.old).resolve() / 'src'}{os.pathsep}{root}"}
        old = json.loads(subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout)
    print(f"microseconds of CPU per decision ({'mixed needs' if args.mixed else 'one engine'}, {args.cores} cores)")
    print("streams:first queued | " + " | ".join(DECISIONS))
    for key, row in new.items():
        cells = []
        for name in DECISIONS:
            cell = f"{row[name]:7.1f}"
            if key in old:
                cell = f"{old[key][name]:7.1f} -> {row[name]:7.1f} ({row[name] / old[key][name]:4.2f}x)"
            cells.append(cell)
        print(f"{key:>20s} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
