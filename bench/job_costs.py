"""Each job of a stream against the cost it was planned with, by its place in the stream.

The server runs in this process (``bench.in_process``); ``voxserve bench`` loads it from a subprocess.
Every session's pool jobs are wrapped (``SynthesisSession._timed``): for each, its place in its stream
(0: the text's phonemes, 1: the segment's front and first window, 2: the next window, ...), the threads
it ran with, its wall time, the cost the planner gave it less the planner's margin (at the threads it
ran with: a job the pool runs on fewer threads than planned is priced there as the pool prices it,
``jobs.cost_at``), and the audio the listener had received when it was submitted. The table gives, per
place, the median, P90 and largest wall time over that cost: a window whose job takes more than the
margin (1.5) over it comes after its listener ran dry when the listener had only that much ahead.

Then the decoder window fit itself: each window's decode time over the engine's fit now (the samples it
was fitted from), by decoded size; the fits; each Kokoro segment's front (``KokoroStreamer.front`` and
the sentence's statistics, ``sentence_frame_stats``, all run before its first window) against one
window's fixed part, which is what the window planner prices it at (``window_budget.front_s``), and
against a line fitted to the fronts by their length; and the statistics alone.

    .venv/bin/python -m bench.job_costs --voice af_heart --concurrency 1 --duration 120
    .venv/bin/python -m bench.job_costs --voice af_heart --concurrency 3 --duration 90 --text-set long
"""

from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np

from bench.in_process import start_server
from voxserve.engines import kokoro_stream
from voxserve.engines.onnx import current_thread_budget
from voxserve.stream import session as session_module
from voxserve.stream.window_budget import MARGIN

Job = tuple[int | None, float, float, float]  # threads, expected cost there (no margin), wall seconds, audio received


Front = tuple[int, int | None, float]  # a segment's phoneme ids, threads, seconds of its front and statistics


def _watch(jobs: dict[int, list[Job]], stats: list[tuple[int, int | None, float]], fronts: list[Front]) -> None:
    """Wrap the session's pool calls and Kokoro's fronts and sentence statistics (on the classes: every
    one is seen)."""
    timed = session_module.SynthesisSession._timed

    async def traced(self: Any, fn: Any, cost: float = 0.0) -> object:
        ran: dict[str, Any] = {}

        def run() -> object:
            ran["threads"], start = current_thread_budget(), time.monotonic()
            try:
                return fn()
            finally:
                ran["wall"] = time.monotonic() - start

        planned = self._windows.budget()[1]  # the threads the session plans it at (the pool may narrow it)
        result = await timed(self, run, cost)
        if cost > 0:  # its cost at the threads it ran with, as the pool priced it there (jobs.cost_at)
            expected = self._windows.cost_at(cost, planned, ran["threads"]) / MARGIN
            jobs[id(self)].append((ran["threads"], expected, ran["wall"], self._clock.audio_s))
        return result

    session_module.SynthesisSession._timed = traced  # type: ignore[method-assign]
    sentence, run_front = kokoro_stream.KokoroStreamer.sentence_frame_stats, kokoro_stream.KokoroStreamer.front
    pending = threading.local()  # the front this worker ran last, until its sentence's statistics

    def timed_front(self: Any, token_ids: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        try:
            return run_front(self, token_ids, *args, **kwargs)
        finally:
            pending.front = (len(token_ids), time.monotonic() - start)

    def timed_stats(self: Any, front: Any, control: Any = None) -> Any:
        start = time.monotonic()
        try:
            return sentence(self, front, control)
        finally:
            seconds, threads = time.monotonic() - start, current_thread_budget()
            stats.append((front.frames, threads, seconds))
            ran = getattr(pending, "front", None)
            if ran is not None:  # a segment's work before its first window: front and statistics
                fronts.append((ran[0], threads, ran[1] + seconds))
                pending.front = None

    kokoro_stream.KokoroStreamer.front = timed_front  # type: ignore[method-assign]
    kokoro_stream.KokoroStreamer.sentence_frame_stats = timed_stats  # type: ignore[method-assign]


def _ratios(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(ordered):.2f}, {p90:.2f}, {ordered[-1]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--concurrency", default="1")
    parser.add_argument("--duration", default="60")
    parser.add_argument("--text-set", default="short", help="the bench's texts: short, long, zh, ja")
    parser.add_argument("--port", type=int, default=18500)
    parser.add_argument("--output", default="bench-results/job-costs")
    args = parser.parse_args()

    jobs: dict[int, list[Job]] = collections.defaultdict(list)
    stats: list[tuple[int, int | None, float]] = []
    fronts: list[Front] = []
    _watch(jobs, stats, fronts)
    served = start_server(args.port)
    state = served.state
    command = [sys.executable, "-m", "voxserve", "bench", "--url", f"http://127.0.0.1:{args.port}"]
    command += ["--voice", args.voice, "--concurrency", args.concurrency, "--duration", args.duration]
    command += ["--text-set", args.text_set]
    out = subprocess.run([*command, "--output", args.output], capture_output=True, text=True).stdout
    print(out[out.find(f"{args.voice}\n") :] if f"{args.voice}\n" in out else out[-2000:])

    places: dict[tuple[int, int | None], list[Job]] = collections.defaultdict(list)
    for stream in jobs.values():
        for place, job in enumerate(stream):
            places[(min(place, 5), job[0])].append(job)
    print("job's place (5: fifth and later), threads: jobs | wall / expected: median, P90, max | audio got, median")
    for (place, threads), found in sorted(places.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        ratios = [wall / planned for _, planned, wall, _ in found]
        received = statistics.median(job[3] for job in found)
        print(f"  {place}, {threads}: {len(found):4d} | {_ratios(ratios)} | {received:.2f} s")

    cost = state.runtime.engine_for(args.voice).window_cost
    print("decoder windows: decode time / the fit now, by decoded seconds (context included)")
    levels = state.runtime._thread_levels if cost is not None else ()
    for threads in levels:
        fit = cost.fit(threads)
        samples = np.array(cost._samples.get(threads, ()), dtype=np.float64).reshape(-1, 2)
        if fit is None or not len(samples):
            continue
        a0, b = fit[0] - 2 * cost.context_s * fit[1], fit[1]
        for low, high in ((0.0, 0.8), (0.8, 1.3), (1.3, 2.0), (2.0, np.inf)):
            chosen = samples[(samples[:, 0] >= low) & (samples[:, 0] < high)]
            if len(chosen):
                ratios = list(chosen[:, 1] / (a0 + b * chosen[:, 0]))
                print(f"  {threads} threads, {low:.1f}-{high:.1f} s: {len(chosen):4d} | {_ratios(ratios)}")
    print("window fits now: threads, a, b, work per audio second of the largest paced windows")
    largest = state.runtime.session_config().max_window_s
    for threads in levels:
        fit = cost.fit(threads)
        if fit is not None:
            print(f"  {threads}: {fit[0]:.3f} + {fit[1]:.3f}/s, {fit[1] + fit[0] / largest:.3f}")
    print("segment fronts (front and statistics): time / one window's fixed part, as the planner prices")
    print("  them | time / a line fitted to these fronts by phoneme ids (in sample): median, P90, max")
    for threads in levels:
        fit = cost.fit(threads)
        mine = np.array([(ids, seconds) for ids, at, seconds in fronts if at == threads], dtype=np.float64)
        if fit is None or len(mine) < 2:
            continue
        slope, intercept = np.polyfit(mine[:, 0], mine[:, 1], 1)
        for low, high in ((0, 60), (60, 120), (120, np.inf)):
            chosen = mine[(mine[:, 0] >= low) & (mine[:, 0] < high)]
            if len(chosen):
                fixed = list(chosen[:, 1] / fit[0])
                line = list(chosen[:, 1] / (intercept + slope * chosen[:, 0]))
                row = f"{len(chosen):4d} | {_ratios(fixed)} | {_ratios(line)}"
                print(f"  {threads} threads, {low}-{high} phoneme ids: {row}")
    if stats:
        print("sentence statistics: frames, threads, seconds (every sixth)")
        for frames, threads, seconds in sorted(stats)[:: max(1, len(stats) // 6)]:
            print(f"  {frames:4d}, {threads}: {seconds:.3f}")
    served.stop()


if __name__ == "__main__":
    main()
