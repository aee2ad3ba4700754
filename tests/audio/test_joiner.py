"""Joiner: click-free joins, natural pauses, crossfaded windows, streaming and position maps."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.audio import Joiner, JoinOutput, discontinuity_score, rms_db, trim_silence
from voxserve.audio.joiner import CrossfadeShape

from ._signals import sine, speechlike

RATE = 24000


def _sentence(seed: int, lead_s: float = 0.3, speech_s: float = 0.8, tail_s: float = 0.5) -> np.ndarray:
    """Model-like output: near-silent padding around speech."""
    rng = np.random.default_rng(seed)
    total = round((lead_s + speech_s + tail_s) * RATE)
    x = (2e-4 * rng.standard_normal(total)).astype(np.float32)
    start = round(lead_s * RATE)
    x[start : start + round(speech_s * RATE)] += speechlike(speech_s, RATE, -18.0, seed=seed)
    return x


def _collect(outputs: list[JoinOutput], tail: np.ndarray) -> np.ndarray:
    return np.concatenate([o.audio for o in outputs] + [tail])


def test_sentences_are_trimmed_and_separated_by_the_pause() -> None:
    joiner = Joiner(RATE)
    a, b = _sentence(1), _sentence(2)
    first = joiner.push(a, trim_start=True, trim_end=True, pause_after_ms=220)
    second = joiner.push(b, trim_start=True, trim_end=True)
    out = _collect([first, second], joiner.finish())

    a_region, b_region = trim_silence(a, RATE), trim_silence(b, RATE)
    pause = round(0.22 * RATE)
    assert (first.span.in_start, first.span.in_end) == a_region
    assert first.span.pause_samples == pause
    assert second.span.out_start == first.span.out_end + pause
    assert len(out) == (a_region[1] - a_region[0]) + pause + (b_region[1] - b_region[0])
    # The model padding is gone: ~0.8 s of silence → the 220 ms pause plus the trim margins.
    assert len(out) < len(a) + len(b) - round(1.0 * RATE)
    joins = [first.span.out_start, first.span.out_end, second.span.out_start, second.span.out_end]
    assert discontinuity_score(out, joins) < 1.5
    assert np.all(out[first.span.out_end : second.span.out_start] == 0)


def test_cuts_inside_sound_are_faded_while_a_naive_cut_clicks() -> None:
    a = sine(180.0, 0.5, RATE, 0.3)
    silent = 777 + round(0.025 * RATE)  # the lead-in, and the joiner's margin before an onset
    b = np.concatenate([np.zeros(silent, dtype=np.float32), sine(180.0, 0.5, RATE, 0.3, phase=2.0)])
    joiner = Joiner(RATE)
    first = joiner.push(a, trim_end=True, tail=1234)
    second = joiner.push(b, trim_start=True, lead_in=777, trim_end=True, tail=0)
    out = _collect([first, second], joiner.finish())
    assert len(out) == len(a) - 1234 + len(b) - 777
    assert second.span.out_start == len(a) - 1234
    assert discontinuity_score(out, [second.span.out_start]) < 1.5

    naive = np.concatenate([a[:-1234], b[777:]])
    assert discontinuity_score(naive, [len(a) - 1234]) > 50


def test_lead_in_keeps_an_onset_that_starts_inside_it() -> None:
    """The model may start a word's first consonant in the last frames of its padding: that is kept."""
    lead_in, onset = 1200, 700
    piece = np.zeros(lead_in + RATE // 2, dtype=np.float32)
    piece[onset:] = sine(180.0, (len(piece) - onset) / RATE, RATE, 0.1)
    out = Joiner(RATE).push(piece, trim_start=True, lead_in=lead_in)
    keep = round(0.025 * RATE)  # the joiner's margin before an onset found by energy
    assert onset - keep <= out.span.in_start < onset - keep + RATE // 1000  # the sine's first loud sample
    # silence past lead_in (by more than the margin): cut exactly there
    quiet = piece.copy()
    quiet[: lead_in + keep] = 0
    assert Joiner(RATE).push(quiet, trim_start=True, lead_in=lead_in).span.in_start == lead_in


def _windows(phase_error: float, overlap: int) -> list[np.ndarray]:
    """Three windows of one 180 Hz 'decoder pass', each restarted with a phase error."""
    bounds = [(0, 12000 + overlap), (12000, 24000 + overlap), (24000, 36000)]
    return [
        (0.3 * np.sin(2 * np.pi * 180 * np.arange(s0, s1) / RATE + phase_error * k)).astype(np.float32)
        for k, (s0, s1) in enumerate(bounds)
    ]


@pytest.mark.parametrize("shape", ["equal_power", "equal_gain"])
def test_contiguous_windows_are_crossfaded_seamlessly(shape: CrossfadeShape) -> None:
    overlap = 480  # 20 ms
    windows = _windows(0.6, overlap)
    joiner = Joiner(RATE, crossfade=shape)
    outputs = [joiner.push(w, crossfade_ms=20.0 if k else 0.0) for k, w in enumerate(windows)]
    out = _collect(outputs, joiner.finish())
    assert len(out) == 36000
    assert [o.span.out_start for o in outputs] == [0, 12000, 24000]
    joins = [12000, 12000 + overlap // 2, 12000 + overlap, 24000, 24000 + overlap]
    assert discontinuity_score(out, joins) < 1.5

    naive = np.concatenate([windows[0][:12000], windows[1][:12000], windows[2]])
    assert discontinuity_score(naive, [12000, 24000]) > 20


def test_equal_gain_keeps_level_of_in_phase_windows() -> None:
    windows = _windows(0.0, 480)
    continuous = (0.3 * np.sin(2 * np.pi * 180 * np.arange(36000) / RATE)).astype(np.float32)
    outs = {}
    for shape in ("equal_power", "equal_gain"):
        joiner = Joiner(RATE, crossfade=shape)
        outputs = [joiner.push(w, crossfade_ms=20.0 if k else 0.0) for k, w in enumerate(windows)]
        outs[shape] = _collect(outputs, joiner.finish())
    assert np.max(np.abs(outs["equal_gain"] - continuous)) < 1e-5
    middle = slice(12000 + 120, 12000 + 360)
    bump = rms_db(outs["equal_power"][middle]) - rms_db(continuous[middle])
    assert bump > 1.5  # the up-to-3 dB bump equal-power gives correlated audio


def test_joiner_streams_and_holds_back_only_the_crossfade_tail() -> None:
    joiner = Joiner(RATE, max_crossfade_ms=25.0)
    hold = round(0.025 * RATE)
    emitted = 0
    for k in range(5):
        piece = speechlike(0.4, RATE, seed=k)
        out = joiner.push(piece, crossfade_ms=10.0 if k else 0.0)
        emitted += len(out.audio)
        assert joiner.held == hold
        assert emitted == joiner.emitted
        assert len(out.audio) >= len(piece) - hold - round(0.010 * RATE)
    end = joiner.push(speechlike(0.4, RATE, seed=9), trim_end=True, tail=0)
    assert joiner.held == 0
    assert end.span.out_end == joiner.emitted
    assert len(joiner.finish()) == 0


def test_span_maps_piece_positions_to_stream_positions() -> None:
    rng = np.random.default_rng(5)
    joiner = Joiner(RATE)
    outputs = []
    markers = []
    for k in range(3):
        piece = _sentence(10 + k, lead_s=0.2 + 0.1 * k)
        position = round((0.45 + 0.1 * k) * RATE) + int(rng.integers(0, 2000))
        piece[position] = 0.95  # an impulse marks a known sample
        markers.append(position)
        outputs.append(joiner.push(piece, trim_start=True, trim_end=True, pause_after_ms=90.0 * k))
    out = _collect(outputs, joiner.finish())
    for output, position in zip(outputs, markers, strict=True):
        mapped = output.span.to_output(position)
        assert out[mapped] == pytest.approx(0.95, abs=1e-6)
    # Positions in trimmed padding clamp to the piece's edges.
    assert outputs[1].span.to_output(0) == outputs[1].span.out_start
    assert outputs[1].span.to_output(10**9) == outputs[1].span.out_end


def test_silent_piece_contributes_only_its_pause() -> None:
    joiner = Joiner(RATE)
    joiner.push(speechlike(0.3, RATE), trim_end=True)
    silent = joiner.push(np.zeros(RATE, dtype=np.float32), trim_start=True, trim_end=True, pause_after_ms=100)
    assert silent.span.in_start == silent.span.in_end
    assert len(silent.audio) == round(0.1 * RATE)


def test_overlap_beyond_held_tail_drops_the_already_played_head() -> None:
    joiner = Joiner(RATE, max_crossfade_ms=5.0)  # holds 120 samples
    first = joiner.push(np.ones(1000, dtype=np.float32))
    second = joiner.push(np.ones(1000, dtype=np.float32), crossfade_ms=20.0)  # asks for 480
    out = _collect([first, second], joiner.finish())
    assert second.span.in_start == 480 - 120
    assert second.span.out_start == 1000 - 120
    assert len(out) == 1000 + 1000 - 480


def test_crossfade_without_a_held_tail_is_a_plain_join() -> None:
    joiner = Joiner(RATE)
    first = joiner.push(np.ones(1000, dtype=np.float32), crossfade_ms=20.0)  # nothing to mix with
    assert first.span.in_start == 0 and len(first.audio) + joiner.held == 1000
    joiner.push(np.ones(1000, dtype=np.float32), trim_end=True, tail=0)
    third = joiner.push(np.ones(1000, dtype=np.float32), crossfade_ms=20.0)  # previous end was trimmed
    assert third.span.in_start == 0 and third.span.out_start == 2000


def test_push_after_finish_is_an_error() -> None:
    joiner = Joiner(RATE)
    joiner.finish()
    with pytest.raises(RuntimeError):
        joiner.push(np.zeros(10, dtype=np.float32))
