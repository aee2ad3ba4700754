from __future__ import annotations

import pytest

from voxserve.stream.session import SessionConfig, segment_window_s

CONFIG = SessionConfig(first_window_s=0.4, max_window_s=4.0)


def test_a_stream_well_ahead_gets_the_largest_windows() -> None:
    # Kokoro-like cost (0.4 s of work per audio second), 12 s made, 7 s played: 5 s ahead
    assert segment_window_s(CONFIG, audio_s=12.0, played_s=7.0, compute_s=4.8, load=1.0) is None
    # 3 s ahead (the default lookahead) affords a 3 s window
    assert segment_window_s(CONFIG, audio_s=10.0, played_s=7.0, compute_s=4.0, load=1.0) == pytest.approx(3.0)


def test_a_stream_short_of_audio_gets_a_window_it_can_finish() -> None:
    window = segment_window_s(CONFIG, audio_s=3.0, played_s=2.0, compute_s=1.2, load=1.0)
    assert window == pytest.approx(1.0 / (0.4 * 2.5))
    # the same stream sharing its worker with another one gets half as much
    shared = segment_window_s(CONFIG, audio_s=3.0, played_s=2.0, compute_s=1.2, load=2.0)
    assert shared == pytest.approx(window / 2)  # type: ignore[operator]


def test_a_cheap_engine_keeps_large_windows_with_little_ahead() -> None:
    # Piper-like cost (0.06 s per audio second): 0.7 s ahead already covers a 4 s window
    assert segment_window_s(CONFIG, audio_s=3.0, played_s=2.3, compute_s=0.18, load=1.0) is None


def test_never_below_the_first_window() -> None:
    assert segment_window_s(CONFIG, audio_s=3.0, played_s=3.2, compute_s=1.2, load=4.0) == CONFIG.first_window_s
