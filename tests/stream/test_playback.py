"""The listener model shared by the server's underrun count and the load tool, on synthetic timelines."""

from __future__ import annotations

import pytest

from voxserve.stream.playback import PlaybackClock, replay


def test_audio_in_time_never_stalls() -> None:
    clock = replay([(10.0, 0.5), (10.3, 0.5), (10.9, 1.0)])
    assert not clock.stalled
    assert clock.stall_s == 0.0
    assert clock.audio_s == pytest.approx(2.0)
    assert clock.runs_dry_at == pytest.approx(12.0)


def test_a_late_chunk_is_one_stall_of_the_gap() -> None:
    # 0.4 s arrives at t=0, plays until 0.4; the next arrives at 0.7: the listener waited 0.3 s
    clock = replay([(0.0, 0.4), (0.7, 0.5), (1.1, 0.5)])
    assert [(s.at_s, round(s.wait_s, 6)) for s in clock.stalls] == [(0.4, 0.3)]
    # playback resumed at 0.7, so the third chunk (due at 1.2) was in time
    assert clock.runs_dry_at == pytest.approx(1.7)


def test_waits_add_up_and_the_end_is_not_a_stall() -> None:
    clock = replay([(0.0, 0.2), (0.5, 0.2), (1.0, 0.2)])
    assert clock.stall_s == pytest.approx(0.3 + 0.3)
    assert len(clock.stalls) == 2
    assert clock.ahead_s(5.0) == 0.0


def test_ahead_and_deadline_follow_the_clock() -> None:
    clock = PlaybackClock()
    assert clock.ahead_s(1.0) == 0.0 and clock.runs_dry_at is None
    assert clock.on_audio(1.0, 2.0) == 0.0
    assert clock.first_at == 1.0
    assert clock.ahead_s(1.5) == pytest.approx(1.5)
    assert clock.on_audio(4.0, 1.0) == pytest.approx(1.0)
    assert clock.on_audio(4.2, 0.0) == 0.0  # empty chunks carry no audio and move nothing
    assert clock.runs_dry_at == pytest.approx(5.0)


def test_a_wait_for_the_clients_text_is_no_stall() -> None:
    clock = PlaybackClock()
    clock.on_audio(0.0, 1.0)  # plays until 1.0
    assert not clock.text_arrived(0.5)  # text while audio is still playing: the listener goes on
    assert clock.playing and clock.runs_dry_at == pytest.approx(1.0)
    assert clock.text_arrived(3.0)  # the listener ran dry at 1.0 waiting for this text
    assert not clock.playing and clock.ahead_s(3.2) == 0.0
    assert clock.on_audio(3.4, 0.5) == 0.0  # playback starts again here, as at the first audio
    assert clock.first_at == 0.0 and clock.audio_s == pytest.approx(1.5)
    assert clock.on_audio(4.1, 0.5) == pytest.approx(0.2)  # a late chunk after that still counts
    assert [(s.at_s, round(s.wait_s, 6)) for s in clock.stalls] == [(1.5, 0.2)]


def test_text_before_any_audio_changes_nothing() -> None:
    clock = PlaybackClock()
    assert not clock.text_arrived(1.0)
    assert clock.on_audio(2.0, 0.5) == 0.0 and clock.first_at == 2.0
