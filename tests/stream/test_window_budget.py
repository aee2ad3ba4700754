from __future__ import annotations

from typing import cast

import pytest

from voxserve.engines.base import Engine
from voxserve.engines.windowing import WindowCost
from voxserve.stream.pool import WorkerPool
from voxserve.stream.window_budget import (
    GAINING_CAP_S,
    MARGIN,
    START_MARGIN,
    break_even_s,
    next_window_s,
    start_window_s,
    sustaining_lead_s,
)

FIRST, LARGEST = 0.4, 4.0
WIDE = (0.17, 0.35)  # seconds of work per window and per audio second: Kokoro alone on 2 cores
NARROW = (0.22, 0.59)  # ... on one core of two


def test_break_even_is_where_a_window_costs_what_it_plays() -> None:
    n = break_even_s(NARROW, 1.0)
    assert 0.22 + 0.59 * n == pytest.approx(n)
    assert break_even_s(NARROW, 2.0) == float("inf")  # two streams per core: 1.18 s of work per second


def test_a_lone_stream_starts_with_the_small_first_window() -> None:
    assert start_window_s(FIRST, LARGEST, WIDE, load=1.0) == FIRST
    assert start_window_s(FIRST, LARGEST, None, load=3.0) == FIRST  # nothing learned yet


def test_a_slower_share_starts_with_a_window_that_gains_on_playback() -> None:
    window = start_window_s(FIRST, LARGEST, NARROW, load=1.0)
    assert window == pytest.approx(START_MARGIN * break_even_s(NARROW, 1.0))
    assert 0.22 + 0.59 * window < window  # done before it has played
    # can't keep up at all, or only with huge windows: capped, a larger start doesn't pay
    assert start_window_s(FIRST, LARGEST, NARROW, load=2.0) == GAINING_CAP_S
    assert start_window_s(FIRST, LARGEST, (0.01, 0.06), load=4.0) == FIRST  # Piper-like: cheap enough


def test_the_next_window_is_done_before_the_audio_ahead_has_played() -> None:
    window = next_window_s(1.5, FIRST, LARGEST, NARROW, load=1.0)
    assert window is not None
    assert MARGIN * (0.22 + 0.59 * window) == pytest.approx(1.5)
    # the same stream sharing its core with another one gets less
    shared = next_window_s(2.0, FIRST, LARGEST, (0.16, 0.3), load=2.0)
    assert shared is not None and 2 * MARGIN * (0.16 + 0.3 * shared) == pytest.approx(2.0)


def test_a_stream_well_ahead_gets_the_largest_windows() -> None:
    assert next_window_s(5.0, FIRST, LARGEST, WIDE, load=1.0) == LARGEST
    assert next_window_s(0.8, FIRST, LARGEST, (0.01, 0.06), load=1.0) == LARGEST  # Piper-like


def test_windows_grow_from_the_first_one_without_stalling() -> None:
    """Simulate a stream: each window is sized from the audio ahead, and costs exactly the estimate."""
    for cost, load in ((WIDE, 1.0), (NARROW, 1.0), ((0.16, 0.3), 2.0)):
        window = start_window_s(FIRST, LARGEST, cost, load)
        ahead, sizes = window, [window]
        for _ in range(12):
            size = next_window_s(ahead, FIRST, LARGEST, cost, load)
            took = load * (cost[0] + cost[1] * size)
            assert took <= ahead, f"stall with {cost} x{load} after windows {sizes}"
            ahead += size - took
            sizes.append(size)
        assert sizes[-1] == LARGEST, sizes


def test_too_little_ahead_gets_a_window_that_regains_ground() -> None:
    assert next_window_s(0.1, FIRST, LARGEST, NARROW, load=1.0) == start_window_s(FIRST, LARGEST, NARROW, load=1.0)


def test_window_cost_learns_the_fixed_and_per_second_cost() -> None:
    cost = WindowCost(context_s=0.2, min_samples=4)
    for decoded_s in (0.5, 0.5, 0.7):
        cost.record(decoded_s, 0.015 + 0.36 * decoded_s)
    assert cost.fit() is None  # too few samples, all of similar size
    for decoded_s in (1.4, 4.0):
        cost.record(decoded_s, 0.015 + 0.36 * decoded_s)
    fit = cost.fit()
    assert fit is not None
    a, b = fit
    # per window: the call itself plus 0.2 s of context decoded on each side
    assert a == pytest.approx(0.015 + 0.4 * 0.36) and b == pytest.approx(0.36)


def test_window_cost_is_learned_per_thread_count() -> None:
    cost = WindowCost(context_s=0.2, min_samples=2)
    for decoded_s in (0.5, 2.0):
        cost.record(decoded_s, 0.6 * decoded_s, threads=1)
        cost.record(decoded_s, 0.35 * decoded_s, threads=2)
    assert cost.fit() is None  # nothing recorded without a thread budget
    narrow, wide = cost.fit(1), cost.fit(2)
    assert narrow is not None and narrow[1] == pytest.approx(0.6)
    assert wide is not None and wide[1] == pytest.approx(0.35)


class _Cost:
    def __init__(self, cost: tuple[float, float] = NARROW) -> None:
        self.cost = cost

    def fit(self, threads: int | None) -> tuple[float, float]:
        return self.cost


class _Engine:
    """What a session reads of an engine when it sizes windows."""

    sample_rate = 24_000
    window_cost = _Cost()


class _CostEngine(_Engine):
    def __init__(self, cost: tuple[float, float]) -> None:
        self.window_cost = _Cost(cost)


class _Pool:
    """What a session reads of the pool when it sizes windows: how many streams share it."""

    def __init__(self) -> None:
        self.streams = 1
        self.load = 1.0
        self.thin = 0  # playing streams short of audio, beside this one

    def share(self, held: bool = True, need: float | None = None, newcomer: bool = False) -> tuple[int, float]:
        return 1, self.load

    def hold_limit(self, stream: object, threads: int) -> float:
        return float("inf")  # no other stream needs a core

    def crowded(self, threads: int | None) -> bool:
        return self.thin > 1  # one job slot


def test_an_unpaced_stream_takes_the_largest_windows_only_while_alone_and_ahead() -> None:
    import time

    from voxserve.stream.playback import PlaybackClock
    from voxserve.stream.session_config import SessionConfig
    from voxserve.stream.window_budget import WindowPlanner

    def planner(config: SessionConfig, ahead_s: float) -> WindowPlanner:
        clock = PlaybackClock()
        clock.on_audio(time.monotonic(), ahead_s)  # the stream's audio so far, its listener just started
        return WindowPlanner(cast(Engine, _Engine()), cast(WorkerPool, pool), config, clock)

    pool = _Pool()
    config = SessionConfig(pace=False, max_window_s=2.0, max_unpaced_window_s=4.0)
    far_ahead = planner(config, 10.0)
    assert far_ahead.next_s() == 4.0  # alone: up to the engine's largest, fewest seams
    pool.streams = 2  # another stream shares the cores: no window longer than a paced one
    assert far_ahead.next_s() == config.max_window_s
    pool.streams = 1
    # just after a 0.4 s first window: still sized for its listener, a 4 s window would stall it
    window = planner(config, 0.4).next_s()
    assert window is not None and window < 1.0
    paced = SessionConfig(pace=True, max_window_s=2.0, max_unpaced_window_s=4.0)
    assert planner(paced, 10.0).next_s() == 2.0  # a listener's stream is always within the paced maximum


def test_a_window_holds_its_core_no_longer_than_the_other_streams_can_spare() -> None:
    held = next_window_s(5.0, FIRST, LARGEST, WIDE, load=1.0, hold_s=1.0)
    assert MARGIN * (WIDE[0] + WIDE[1] * held) == pytest.approx(1.0)
    # but never below a first window: smaller ones would lose ground to their own context
    assert next_window_s(5.0, FIRST, LARGEST, WIDE, load=1.0, hold_s=0.0) == FIRST


def test_the_window_after_a_small_first_one_is_done_before_the_listener_runs_dry() -> None:
    """A stream that started with a small first window while alone, and finds others sharing the cores
    at its second: the window that gains at that load takes longer than the audio it has, so it gets
    one that can be done in time on its own core instead (seen simulated: a stall right after the first
    window)."""
    cost, load = (0.16, 0.3), 2.0
    gaining = start_window_s(FIRST, LARGEST, cost, load)
    assert cost[0] + cost[1] * gaining > FIRST  # would stall even if started at once
    window = next_window_s(FIRST, FIRST, LARGEST, cost, load)
    assert window == start_window_s(FIRST, LARGEST, cost, 1.0)  # the window a stream alone starts with
    assert cost[0] + cost[1] * window < FIRST


def test_windows_are_not_cut_below_the_gaining_size_while_more_streams_are_short_than_can_run() -> None:
    """A cut window comes in time only if its stream gets a core at once. With more streams short of
    audio than jobs that can run, they cannot all get one, and cut windows (as much context as audio)
    would spend the cores on context: every stream cutting at once is how a load near the cores' limit
    tips past it. Then the window stays the one that gains at the stream's load."""
    import time

    from voxserve.stream.playback import PlaybackClock
    from voxserve.stream.session_config import SessionConfig
    from voxserve.stream.window_budget import WindowPlanner

    cost, load = (0.16, 0.3), 2.0
    gaining = start_window_s(FIRST, LARGEST, cost, load)
    assert next_window_s(FIRST, FIRST, LARGEST, cost, load, cut=False) == pytest.approx(gaining)
    assert next_window_s(FIRST, FIRST, LARGEST, cost, load) < gaining  # cut, as the test above

    class Pool(_Pool):
        def share(self, held: bool = True, need: float | None = None, newcomer: bool = False) -> tuple[int, float]:
            return 1, load

    pool, clock = Pool(), PlaybackClock()
    config = SessionConfig(pace=True, first_window_s=FIRST, max_window_s=LARGEST)
    planner = WindowPlanner(cast(Engine, _CostEngine(cost)), cast(WorkerPool, pool), config, clock)
    clock.on_audio(time.monotonic(), FIRST)
    assert planner.next_s() == pytest.approx(start_window_s(FIRST, LARGEST, cost, 1.0), abs=0.02)  # cut
    pool.thin = 2
    assert planner.next_s() == pytest.approx(gaining)


def test_a_stream_is_thin_while_the_window_that_gains_at_its_load_does_not_fit_what_it_has_coming() -> None:
    """With the sustaining lead ahead, the next window is the one that gains at that load, done within the
    margin. The planner reports what the stream has coming beyond it, counting the window being
    decoded, so the pool can hold a new stream back while a playing one is thin."""
    import time

    from voxserve.stream.playback import PlaybackClock
    from voxserve.stream.session_config import SessionConfig
    from voxserve.stream.window_budget import WindowPlanner

    for load in (1.0, 1.5):
        lead = sustaining_lead_s(FIRST, LARGEST, NARROW, load)
        gaining = start_window_s(FIRST, LARGEST, NARROW, load)
        assert next_window_s(lead, FIRST, LARGEST, NARROW, load) == pytest.approx(gaining)
    assert sustaining_lead_s(FIRST, LARGEST, NARROW, 1.5) > sustaining_lead_s(FIRST, LARGEST, NARROW, 1.0)

    pool, clock = _Pool(), PlaybackClock()
    config = SessionConfig(pace=True, first_window_s=FIRST, max_window_s=LARGEST)
    planner = WindowPlanner(cast(Engine, _Engine()), cast(WorkerPool, pool), config, clock)
    assert planner.spare_s() == float("inf")  # not playing yet: nothing to protect
    clock.on_audio(time.monotonic(), 1.0)
    pool.load = 1.5
    needed = sustaining_lead_s(FIRST, LARGEST, NARROW, 1.5)
    assert needed > 1.0  # one second ahead is thin at this load
    assert planner.spare_s() == pytest.approx(1.0 - needed, abs=0.01)
    window = planner.next_s()  # a window is planned: not coming until it is decoded
    assert window is not None
    assert planner.spare_s() == pytest.approx(1.0 - needed, abs=0.01)
    planner.made(window)  # decoded, not yet delivered: its audio is coming
    assert planner.spare_s() == pytest.approx(1.0 + window - needed, abs=0.01)
    clock.on_audio(time.monotonic(), window)  # it arrived: counted once, as audio ahead
    assert planner.spare_s() == pytest.approx(1.0 + window - needed, abs=0.01)


def test_a_segments_first_window_leaves_time_for_its_front() -> None:
    """A segment's first job runs its front (about one window's fixed part) before the window: with a
    lead of 2 s and nothing else bounding it, front and window together are done within the margin,
    not the window alone (seen: a stall at each sentence join of a lone listener on a slow machine)."""
    import time

    from voxserve.stream.playback import PlaybackClock
    from voxserve.stream.session_config import SessionConfig
    from voxserve.stream.window_budget import WindowPlanner, front_s

    clock = PlaybackClock()
    clock.on_audio(time.monotonic(), 2.0)
    config = SessionConfig(pace=True, first_window_s=FIRST, max_window_s=LARGEST)
    planner = WindowPlanner(cast(Engine, _Engine()), cast(WorkerPool, _Pool()), config, clock)
    a, b = NARROW
    later = planner.next_s()
    first = planner.next_s(starts_segment=True)
    assert later is not None and first is not None and first < later
    assert MARGIN * (front_s(NARROW) + a + b * first) == pytest.approx(2.0, abs=0.01)


def test_a_stream_tells_the_pool_the_cores_it_keeps_busy_at_one_thread() -> None:
    """What the pool splits the cores by (:meth:`~voxserve.stream.sharing.CoreSharing._count`): the
    one-thread cost of the stream's largest windows per audio second; nothing before a cost is learned."""
    from voxserve.stream.playback import PlaybackClock
    from voxserve.stream.session_config import SessionConfig
    from voxserve.stream.window_budget import WindowPlanner

    config = SessionConfig(max_window_s=4.0)
    cost = (0.2, 0.5)
    planner = WindowPlanner(cast(Engine, _CostEngine(cost)), cast(WorkerPool, _Pool()), config, PlaybackClock())
    assert planner.need() == pytest.approx(0.5 + 0.2 / 4.0)

    class _Unlearned:
        window_cost = None

    unlearned = WindowPlanner(cast(Engine, _Unlearned()), cast(WorkerPool, _Pool()), config, PlaybackClock())
    assert unlearned.need() is None


class _ThreadCost:
    """A learned cost per thread count: ``wide`` on two threads, ``narrow`` on one."""

    def __init__(self, narrow: tuple[float, float], wide: tuple[float, float]) -> None:
        self.costs = {1: narrow, 2: wide}

    def fit(self, threads: int | None) -> tuple[float, float]:
        return self.costs[threads or 2]


async def test_a_playing_stream_alone_plans_its_windows_to_leave_a_caller_a_core() -> None:
    """A lone stream on every core plans each window as long as its lead allows there: one that then
    cannot run on fewer nor be stopped in time, so a caller arriving meanwhile waits for all of it. A
    stream whose listener plays plans at the threads one more stream would leave it, when its windows
    keep ahead there; the pool runs the window on those, and the other core stays free. Before its first
    audio, or where one core is too slow to keep ahead, it plans (and runs) on every core."""
    import time

    from voxserve.engines.onnx import current_thread_budget
    from voxserve.stream.playback import PlaybackClock
    from voxserve.stream.session_config import SessionConfig
    from voxserve.stream.window_budget import WindowPlanner

    def planner(pool: WorkerPool, narrow: tuple[float, float], ahead_s: float | None) -> WindowPlanner:
        engine = _Engine()
        engine.window_cost = _ThreadCost(narrow, wide=(0.05, 0.15))  # type: ignore[assignment]
        clock = PlaybackClock()
        if ahead_s is not None:
            clock.on_audio(time.monotonic(), ahead_s)
        return WindowPlanner(cast(Engine, engine), pool, SessionConfig(max_window_s=2.0), clock)

    pool = WorkerPool(4, cores=2, levels=(2, 1))
    try:
        with pool.streaming() as stream:
            assert planner(pool, (0.1, 0.3), None).budget()[1] == 2  # before its first audio: every core
            slow = planner(pool, (0.3, 0.7), 3.0)  # one core makes 1 s of audio in 0.85 s: too slow
            assert slow.budget()[1] == 2
            playing = planner(pool, (0.1, 0.3), 3.0)
            assert playing.budget()[1] == 1
            assert playing.budget(held=True)[1] == 2  # what it needs once every stream runs: as it is
            window = playing.next_s(stream)
            assert window is not None
            cost = playing.job_cost(window, starts_segment=False)
            due = time.monotonic() + 3.0
            threads = await pool.run(current_thread_budget, deadline=due, cost=cost, stream=stream, threads=1)
            assert threads == 1  # done in time on one core: the other stays free for a caller

            # too little lead for one core: the pool runs the job on both, and it decodes the window
            # planned for one (done sooner there), not the longest both cores could do in time
            short = planner(pool, (0.1, 0.3), 0.9)
            planned = short.next_s(stream)
            both = await pool.run(lambda: (short.next_s(stream), current_thread_budget()), stream=stream, threads=1)
            assert both == (pytest.approx(planned, abs=0.01), 2)  # (its listener played a moment meanwhile)
            wide = next_window_s(0.9, 0.4, 2.0, (0.05, 0.15), 1.0)  # what both cores could do in time
            assert planned is not None and planned < wide - 0.2
    finally:
        pool.close()
