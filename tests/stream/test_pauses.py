"""A segment's pause is the same wherever its last decoder window was cut (synthetic audio)."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.stream.pauses import TrailingQuiet, pause_after_ms

RATE = 16_000
TARGET_MS = 500.0


def tone(seconds: float) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def quiet(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * RATE), dtype=np.float32)


def ends_with_s(pieces: list[np.ndarray], tail: int) -> float:
    """Silence a segment of ``pieces`` ends with once the last one's padding is dropped and the pause added."""
    before = TrailingQuiet(RATE, TARGET_MS)
    for piece in pieces[:-1]:
        before.add(piece)
    pause = pause_after_ms(pieces[-1], tail, TARGET_MS, before.samples, RATE)
    kept = np.concatenate([*pieces[:-1], pieces[-1][: len(pieces[-1]) - tail]])
    loud = np.flatnonzero(np.abs(kept) > 0.01)
    return (len(kept) - (int(loud[-1]) + 1)) / RATE + pause / 1000


def test_the_pause_does_not_depend_on_the_window_the_speech_ended_in() -> None:
    pad = round(0.1 * RATE)  # the model's padding after its own silence
    # speech, then 0.2 s of the model's own silence, all in the last window
    in_last = ends_with_s([tone(0.8), np.concatenate([tone(0.4), quiet(0.2), quiet(0.1)])], pad)
    # the cut falls 0.12 s after the speech: the last window holds only silence
    cut_after = ends_with_s([np.concatenate([tone(1.2), quiet(0.12)]), np.concatenate([quiet(0.08), quiet(0.1)])], pad)
    # and a window of nothing but silence before the last
    two_quiet = ends_with_s([tone(1.2), quiet(0.1), np.concatenate([quiet(0.1), quiet(0.1)])], pad)
    assert in_last == pytest.approx(TARGET_MS / 1000, abs=0.002)
    assert cut_after == pytest.approx(in_last, abs=0.005)
    assert two_quiet == pytest.approx(in_last, abs=0.005)


def test_a_natural_silence_longer_than_the_pause_is_kept_and_nothing_added() -> None:
    before = TrailingQuiet(RATE, TARGET_MS)
    before.add(np.concatenate([tone(0.5), quiet(0.4)]))
    assert pause_after_ms(quiet(0.3), 0, TARGET_MS, before.samples, RATE) == 0.0


def test_without_known_padding_the_last_pieces_silence_is_trimmed_but_earlier_silence_counts() -> None:
    before = TrailingQuiet(RATE, TARGET_MS)
    before.add(np.concatenate([tone(0.5), quiet(0.2)]))
    # the joiner trims a last piece's trailing silence when the padding is not known: the whole pause is added
    assert pause_after_ms(np.concatenate([tone(0.3), quiet(0.2)]), None, TARGET_MS, before.samples, RATE) == TARGET_MS
    # a last piece with no sound is trimmed away: the silence the piece before ended with is the pause's start
    assert pause_after_ms(quiet(0.2), None, TARGET_MS, before.samples, RATE) == pytest.approx(TARGET_MS - 200, abs=2)


def test_no_pause_wanted_adds_none() -> None:
    assert pause_after_ms(quiet(0.3), None, 0.0, 1000, RATE) == 0.0


def test_trailing_quiet_counts_silent_pieces_and_starts_over_at_sound() -> None:
    q = TrailingQuiet(RATE, TARGET_MS)
    q.add(quiet(0.1))
    q.add(quiet(0.1))
    assert q.samples == round(0.2 * RATE)
    q.add(np.concatenate([quiet(0.1), tone(0.2)]))
    assert q.samples == 0


def test_trailing_quiet_counts_no_further_than_the_pause_and_not_at_all_without_one() -> None:
    q = TrailingQuiet(RATE, TARGET_MS)
    q.add(np.concatenate([tone(0.5), quiet(0.8)]))  # more than the pause: the pause's worth is all that counts
    assert q.samples == round(TARGET_MS / 1000 * RATE)
    assert pause_after_ms(quiet(0.1), 0, TARGET_MS, q.samples, RATE) == 0.0
    none = TrailingQuiet(RATE, 0.0)  # a segment that ends without a pause
    none.add(quiet(0.3))
    assert none.samples == 0
