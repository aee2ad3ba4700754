"""One scheduling decision reads each stream's spare and need once (voxserve.stream.jobs.Reads), however
many of its steps ask: a stream's spare asks the pool for its share in turn, so reading them afresh at
each step costs the square of the streams under the pool's lock."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from voxserve.stream.jobs import ActiveStream, Job, Reads
from voxserve.stream.sharing import CoreSharing


def test_reads_are_kept_within_a_decision_and_nested_ones_and_dropped_after() -> None:
    reads, count = Reads(), Counter[str]()

    def read() -> int:
        count["read"] += 1
        return count["read"]

    assert (reads.once("k", read), reads.once("k", read)) == (1, 2)  # outside a decision: read every time
    with reads:
        assert reads.once("k", read) == 3
        with reads:  # a decision inside another is part of it
            assert reads.once("k", read) == 3
        assert (reads.once("k", read), reads.once("other", read)) == (3, 4)
    with reads:
        assert reads.once("k", read) == 5  # the next decision reads afresh


def _pool(streams: int, first: int, spares: Counter[int], needs: Counter[tuple[int, int]]) -> tuple[CoreSharing, Job]:
    """Two shared cores with ``streams`` streams, each of which counts how often its spare and need are
    read; the spare asks the pool for the stream's share, as a window planner's does. The first
    ``first`` have a first audio queued, the others their next window; returns the pool and a queued
    playing job."""
    sharing = CoreSharing(2, (2, 1))
    loop = asyncio.new_event_loop()
    now = time.monotonic()

    def stream(i: int) -> ActiveStream:
        def need(threads: int) -> float:
            needs[i, threads] += 1
            return 0.1 / threads

        def spare() -> float:
            spares[i] += 1
            _, load = sharing.share(True, 0.1)
            return float("inf") if i < first else (0.4 * (i % 3) - 0.1 * load)

        return ActiveStream(lambda: now + 1.0 + i, spare, need)

    entries = [stream(i) for i in range(streams)]
    sharing._streams.extend(entries)
    for i, entry in enumerate(entries):
        due = now if i < first else now + 1.0 + i
        job = Job(due if i < first else due - 0.3, i, lambda: None, loop, loop.create_future(), due, 0.3, entry)
        job.first = i < first
        sharing._heap.append(job)
    sharing._heap.sort()
    return sharing, sharing._heap[-1]


def test_a_decision_reads_each_streams_spare_and_need_once_with_newcomers_queued() -> None:
    """With first audios queued, every step of a decision asks which streams are thin (each stream's
    spare, which asks for the stream's share: every stream's need); each is read once all the same."""
    spares, needs = Counter[int](), Counter[tuple[int, int]]()
    sharing, job = _pool(12, 3, spares, needs)
    assert job.first is False
    decisions = (
        lambda: sharing.share(False, 0.1),
        lambda: sharing.hold_limit(sharing._streams[-1], 1),
        lambda: sharing.crowded(1),
        sharing._ready,
        lambda: sharing._threads_for(job, False),
    )
    for decide in decisions:
        spares.clear()
        needs.clear()
        with sharing._cond:
            decide()
        assert max(spares.values(), default=0) <= 1, decide
        assert max(needs.values(), default=0) <= 1, decide
    assert sharing._thin(), "some streams were thin: the decisions did read their spares"
