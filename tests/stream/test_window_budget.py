from __future__ import annotations

import pytest

from voxserve.engines.windowing import WindowCost
from voxserve.stream.window_budget import GAINING_CAP_S, segment_window_s, start_window_s

FIRST, LARGEST = 0.4, 4.0
KOKORO = (0.16, 0.36)  # seconds of work per window and per audio second, Kokoro on 2 cores


def test_a_stream_well_ahead_gets_the_largest_windows() -> None:
    # Kokoro-like cost (0.4 s of work per audio second), 12 s made, 7 s played: 5 s ahead
    assert segment_window_s(FIRST, LARGEST, audio_s=12.0, played_s=7.0, compute_s=4.8, load=1.0) is None
    # 3 s ahead (the default lookahead) affords a 3 s window
    assert segment_window_s(FIRST, LARGEST, audio_s=10.0, played_s=7.0, compute_s=4.0, load=1.0) == pytest.approx(3.0)


def test_a_stream_short_of_audio_gets_a_window_it_can_finish() -> None:
    window = segment_window_s(FIRST, LARGEST, audio_s=3.0, played_s=2.0, compute_s=1.2, load=1.0)
    assert window == pytest.approx(1.0 / (0.4 * 2.5))
    # the same stream sharing its worker with another one gets half as much
    shared = segment_window_s(FIRST, LARGEST, audio_s=3.0, played_s=2.0, compute_s=1.2, load=2.0)
    assert shared == pytest.approx(window / 2)  # type: ignore[operator]


def test_a_cheap_engine_keeps_large_windows_with_little_ahead() -> None:
    # Piper-like cost (0.06 s per audio second): 0.7 s ahead already covers a 4 s window
    assert segment_window_s(FIRST, LARGEST, audio_s=3.0, played_s=2.3, compute_s=0.18, load=1.0) is None


def test_never_below_the_first_window() -> None:
    assert segment_window_s(FIRST, LARGEST, audio_s=3.0, played_s=3.2, compute_s=1.2, load=4.0) == FIRST


def test_a_lone_stream_starts_with_the_small_first_window() -> None:
    assert start_window_s(FIRST, LARGEST, KOKORO, load=1.0) == FIRST
    assert start_window_s(FIRST, LARGEST, None, load=3.0) == FIRST  # nothing learned yet


def test_streams_sharing_a_worker_start_with_windows_that_gain_on_playback() -> None:
    window = start_window_s(FIRST, LARGEST, KOKORO, load=2.0)
    # two streams: a window of n seconds takes 2 * (0.16 + 0.36 n) of wall time, which is less than n
    # only above ~1.14 s
    gain = window - 2 * (0.16 + 0.36 * window)  # buffer gained per window
    assert 1.14 < window <= GAINING_CAP_S and gain > 0.2
    # can't keep up at all, or only with huge windows: capped, a larger start doesn't pay
    assert start_window_s(FIRST, LARGEST, KOKORO, load=3.0) == GAINING_CAP_S
    assert start_window_s(FIRST, LARGEST, (0.26, 0.42), load=2.0) == GAINING_CAP_S
    assert start_window_s(FIRST, LARGEST, (0.01, 0.06), load=4.0) == FIRST  # Piper-like: cheap enough


def test_window_cost_learns_the_fixed_and_per_second_cost() -> None:
    cost = WindowCost(context_s=0.2, min_samples=4)
    for decoded_s in (0.5, 0.5, 0.7):
        cost.record(decoded_s, 0.015 + 0.36 * decoded_s)
    assert cost.fit() is None  # too few samples, all of similar size
    for decoded_s in (1.4, 4.0):
        cost.record(decoded_s, 0.015 + 0.36 * decoded_s)
    a, b = cost.fit()  # type: ignore[misc]
    # per window: the call itself plus 0.2 s of context decoded on each side
    assert a == pytest.approx(0.015 + 0.4 * 0.36) and b == pytest.approx(0.36)


def test_a_later_segment_under_load_never_gets_a_window_that_loses_ground() -> None:
    little_ahead = {"audio_s": 3.0, "played_s": 2.6, "compute_s": 1.2}
    alone = segment_window_s(FIRST, LARGEST, **little_ahead, load=2.0)
    assert alone == FIRST  # nothing learned: the old rule
    learned = segment_window_s(FIRST, LARGEST, **little_ahead, load=2.0, cost=KOKORO)
    assert learned == start_window_s(FIRST, LARGEST, KOKORO, load=2.0)
