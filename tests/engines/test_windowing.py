"""Window planning: growing windows for a stream's first segment, large ones later."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from voxserve.engines.windowing import CrossfadeJoiner, WindowConfig, WindowCost, decode_pieces, iter_windows
from voxserve.errors import InvalidInput


def test_windows_cover_every_frame_once_and_grow() -> None:
    windows = list(iter_windows(300, 14, 20, 16, 16, growth=2.0, max_size=160))
    assert windows[0].start == 0 and windows[-1].end == 300
    assert all(a.end == b.start for a, b in itertools.pairwise(windows))
    sizes = [w.end - w.start for w in windows]
    assert sizes[:4] == [14, 20, 40, 80]
    assert max(sizes) <= 160 + 80  # a short remainder may be merged into the last window
    assert all(w.ctx_start == max(0, w.start - 16) and w.ctx_end == min(300, w.end + 16) for w in windows)


def test_fixed_windows_without_growth() -> None:
    sizes = [w.end - w.start for w in iter_windows(100, 10, 30, 4, 4)]
    assert sizes == [10, 30, 30, 30]


def test_bad_plans_are_refused() -> None:
    with pytest.raises(InvalidInput):
        list(iter_windows(100, 0, 10, 4, 4))
    with pytest.raises(InvalidInput):
        list(iter_windows(100, 10, 10, 4, 4, growth=0.5))


def test_config_plans_small_first_windows_only_for_a_streams_first_segment() -> None:
    config = WindowConfig(first_s=0.25, next_s=0.5, growth=2.0, max_s=4.0)
    frame = 0.025  # Kokoro: 600 samples at 24 kHz
    assert config.plan(0.25, frame) == (10, 20, 160)
    assert config.plan(None, frame) == (160, 160, 160)


def test_a_quantum_makes_window_sizes_multiples_of_it() -> None:
    """With a quantum (batched decoding), windows of different streams come in few, shared sizes."""
    config = WindowConfig(first_s=0.4, next_s=0.5, max_s=4.0, quantum_s=0.25)
    frame_s = 0.025
    first, second, largest = config.plan(0.4, frame_s)
    assert (first, second, largest) == (20, 20, 160)  # 16 frames round to 2 quanta of 10
    budgets = [0.61, 0.74, 1.1, 1.3]  # later segments' first windows, from each stream's own budget
    sizes = {config.plan(s, frame_s)[0] for s in budgets}
    assert sizes == {20, 30, 40, 50} and all(size % 10 == 0 for size in sizes)
    assert WindowConfig(first_s=0.4).plan(0.61, frame_s)[0] == 24  # no quantum: as asked


def test_the_first_window_can_have_less_right_context() -> None:
    plain = list(iter_windows(100, 10, 30, 8, 8))
    short = list(iter_windows(100, 10, 30, 8, 8, first_right=4))
    assert short[0].ctx_end == 14 and plain[0].ctx_end == 18
    assert short[1:] == plain[1:] and short[0].start == plain[0].start and short[0].end == plain[0].end


def test_a_short_remainder_joins_a_large_first_window() -> None:
    """A later segment a little over the largest window is decoded in one window, not 4 s + 0.1 s."""
    assert [(w.start, w.end) for w in iter_windows(172, 160, 160, 8, 8)] == [(0, 172)]
    # a small fast-start first window is kept as it is
    assert [(w.start, w.end) for w in iter_windows(24, 16, 40, 8, 8)] == [(0, 16), (16, 24)]


def test_each_later_window_is_sized_just_before_it_is_cut() -> None:
    """A stream sizes its next window from the audio it has ahead when that window starts."""
    asked: list[int] = []
    sizes = iter([25, 40, 60])

    def next_size() -> int:
        size = next(sizes, 60)
        asked.append(size)
        return size

    windows = iter_windows(140, 10, 30, 4, 4, growth=1.4, next_size=next_size)
    first = next(windows)
    assert (first.start, first.end) == (0, 10) and asked == []  # the first window is the fast-start one
    second = next(windows)
    assert (second.start, second.end) == (10, 35) and asked == [25]
    rest = list(windows)
    assert [(w.start, w.end) for w in rest] == [(35, 75), (75, 140)]  # a remainder under half merged
    assert asked == [25, 40, 60]


def test_work_before_a_window_runs_before_the_window_is_cut() -> None:
    """The sentence's statistics, run before a window, come before that window is sized: a window sized
    by its listener's lead is sized with the time that work took already spent."""
    order: list[str] = []

    def next_size() -> int:
        order.append("cut")
        return 30

    pieces = decode_pieces(
        iter_windows(100, 10, 30, 4, 4, next_size=next_size),
        100,
        lambda i, w: np.zeros((w.ctx_end - w.ctx_start) * 2, dtype=np.float32),
        joiner=CrossfadeJoiner(2, 0),
        cost=WindowCost(0.0),
        frame_s=0.01,
        sample_rate=200,
        phoneme_durations=None,
        lead_in=0,
        tail=0,
        before=lambda i: order.append(f"before {i}"),
    )
    samples = [len(p.samples) for p in pieces]
    assert sum(samples) == 200 and len(samples) == 4  # every frame once, the last window the last piece
    assert order == ["before 0", "before 1", "cut", "before 2", "cut", "before 3", "cut"]


def test_config_turns_a_budget_in_seconds_into_frames() -> None:
    config = WindowConfig(max_s=4.0)
    frame = 0.025
    budget: list[float | None] = [0.5, None, 9.0]
    sizer = config.sizer(lambda: budget.pop(0), frame)
    assert sizer is not None and [sizer(), sizer(), sizer()] == [20, 160, 160]  # None and too large: largest
    assert config.sizer(None, frame) is None
