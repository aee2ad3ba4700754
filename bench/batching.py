"""Does decoding several streams' Kokoro windows in one model call pay on this CPU?

The server can stack the decoder windows of concurrent streams into one call
(:mod:`voxserve.engines.batching`); on a GPU that is how one device serves many streams. On a CPU the
question is whether a batched call makes more audio per core-second than the ways the worker pool runs
the same windows without batching. This takes real decoder windows of one size from the server's own
Kokoro engine and times, for each batch size ``N`` and thread count ``T``, in the same run:

* ``one call``: the ``N`` windows stacked into one call on ``T`` threads;
* ``in turn``: the ``N`` windows one after another on ``T`` threads;
* ``side by side`` (when ``N`` calls of ``T`` threads fit the cores): the ``N`` windows at once, one
  worker thread each, as the pool runs streams that share the cores.

Each cell is the median of ``--repeats`` rounds, the three ways interleaved within a round. The ratio
is the batched call's time over the faster of the other two: below 1, batching pays here.

    .venv/bin/python -m bench.batching --window 0.5 --batch 2,4 --repeats 15
"""

from __future__ import annotations

import argparse
import collections
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from bench.gpu_check import REPLY
from voxserve.engines.batching import stack_feeds
from voxserve.engines.kokoro import KokoroEngine
from voxserve.engines.kokoro_stream import KokoroStreamer
from voxserve.engines.onnx import thread_budget, usable_cores
from voxserve.runtime import Runtime
from voxserve.settings import Settings

Feeds = Mapping[str, Any]


def capture_windows(engine: KokoroEngine, window_s: float) -> tuple[list[str], list[Feeds]]:
    """The decoder's outputs and the feeds of every window of the commonest size when :data:`REPLY` is
    spoken in windows of ``window_s``: the feeds the server would stack."""
    streamer = engine.streamer
    assert isinstance(streamer, KokoroStreamer), "the Kokoro engine is not windowed"
    decoder = streamer.decoder
    seen: list[tuple[list[str], Feeds]] = []
    run = decoder.run

    def recording(outputs: list[str], feeds: Feeds, what: str, control: Any = None) -> Any:
        seen.append((list(outputs), {name: np.array(value) for name, value in feeds.items()}))
        return run(outputs, feeds, what, control)

    decoder.run = recording  # type: ignore[method-assign]
    try:
        for _ in engine.stream(REPLY, "af_heart", 1.0, first_window_s=window_s, next_window_s=lambda: window_s):
            pass
    finally:
        decoder.run = run  # type: ignore[method-assign]
    shapes = collections.Counter(feeds["content"].shape for _, feeds in seen)
    common = shapes.most_common(1)[0][0]
    chosen = [feeds for _, feeds in seen if feeds["content"].shape == common]
    return seen[0][0], chosen


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def compare(
    session: Any, outputs: list[str], windows: Sequence[Feeds], batch: int, threads: int, cores: int, repeats: int
) -> dict[str, float]:
    """Median seconds of each way of decoding ``batch`` windows (see the module docstring) over
    ``repeats`` rounds, the ways interleaved in each; ``session`` is the engine's elastic decoder session."""
    feeds = [dict(windows[i % len(windows)]) for i in range(batch)]
    stacked = stack_feeds(feeds)

    def one_call() -> None:
        with thread_budget(threads):
            session.run(outputs, stacked)

    def in_turn() -> None:
        with thread_budget(threads):
            for feed in feeds:
                session.run(outputs, feed)

    def single(feed: Feeds) -> None:
        with thread_budget(threads):
            session.run(outputs, dict(feed))

    ways: dict[str, Callable[[], object]] = {"one call": one_call, "in turn": in_turn}
    with ThreadPoolExecutor(max_workers=batch) as workers:
        if batch * threads <= cores:
            ways["side by side"] = lambda: list(workers.map(single, feeds))
        for way in ways.values():  # warm each way once
            way()
        times: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(repeats):
            for name, way in ways.items():
                times[name].append(_timed(way))
    return {name: statistics.median(found) for name, found in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=0.5, help="audio seconds per window")
    parser.add_argument("--batch", default="2,4", help="windows per batched call")
    parser.add_argument("--threads", default="", help="thread counts (default: the engine's levels)")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    runtime = Runtime(Settings(_env_file=None, engines=["kokoro"]))
    runtime.load(warm=False)
    try:
        engine = runtime.engine_for("af_heart")
        assert isinstance(engine, KokoroEngine)
        outputs, windows = capture_windows(engine, args.window)
        assert isinstance(engine.streamer, KokoroStreamer)
        session = engine.streamer.decoder_session
        cores = usable_cores()
        levels = (
            [int(t) for t in args.threads.split(",")]
            if args.threads
            else sorted(t or cores for t in runtime._thread_levels)
        )
        frames = windows[0]["content"].shape[-1]
        print(f"{len(windows)} windows of {frames} frames (context included), {cores} cores")
        print("batch, threads: one call / in turn / side by side, ms (median) | one call over the faster other")
        for batch in (int(n) for n in args.batch.split(",")):
            for threads in levels:
                times = compare(session, outputs, windows, batch, threads, cores, args.repeats)
                best = min(t for name, t in times.items() if name != "one call")
                cells = " / ".join(f"{times[name] * 1000:.0f}" if name in times else "-" for name in _WAYS)
                print(f"  {batch}, {threads}: {cells} | {times['one call'] / best:.2f}", flush=True)
    finally:
        runtime.close()


_WAYS = ("one call", "in turn", "side by side")


if __name__ == "__main__":
    main()
