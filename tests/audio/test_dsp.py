"""Silence trimming, fades, crossfades and the click detector."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.audio import discontinuity_score, equal_power_crossfade, fade_in, fade_out, silence, trim_silence

from ._signals import sine, speechlike

RATE = 24000


def _embedded(lead_s: float, speech_s: float, tail_s: float, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    floor = (1e-4 * rng.standard_normal(round((lead_s + speech_s + tail_s) * RATE))).astype(np.float32)
    speech = speechlike(speech_s, RATE, -20.0, seed=seed)
    # Start and end on a syllable so the true region is known.
    speech[: RATE // 100] *= np.linspace(0, 1, RATE // 100, dtype=np.float32)
    start = round(lead_s * RATE)
    floor[start : start + len(speech)] += speech
    return floor


@pytest.mark.parametrize(("lead_s", "tail_s"), [(0.3, 0.5), (0.05, 0.0), (0.0, 0.2)])
def test_trim_finds_speech_region_within_10_ms(lead_s: float, tail_s: float) -> None:
    x = _embedded(lead_s, 1.0, tail_s)
    speech = speechlike(1.0, RATE, -20.0, seed=1)
    active = np.flatnonzero(np.abs(speech) > 10 ** (-45 / 20))
    true_start = round(lead_s * RATE) + active[0]
    true_end = round(lead_s * RATE) + active[-1] + 1
    start, end = trim_silence(x, RATE, keep_ms=0)
    assert abs(start - true_start) <= RATE // 100
    assert abs(end - true_end) <= RATE // 100
    kept_start, kept_end = trim_silence(x, RATE, keep_ms=25)
    assert kept_start == max(0, start - 600)
    assert kept_end == min(len(x), end + 600)


def test_trim_of_silence_is_empty() -> None:
    assert trim_silence(np.zeros(4800, dtype=np.float32), RATE) == (0, 0)
    assert trim_silence(np.zeros(0, dtype=np.float32), RATE) == (0, 0)


def test_fades_reach_zero_and_keep_the_middle() -> None:
    x = np.ones(1000, dtype=np.float32)
    y = fade_out(fade_in(x, 120), 120)
    assert y[0] < 0.001 and y[-1] < 0.001
    assert np.all(np.diff(y[:120]) > 0)
    assert np.array_equal(y[120:-120], x[120:-120])
    assert np.array_equal(x, np.ones(1000, dtype=np.float32))  # inputs are not modified


def test_equal_power_crossfade_keeps_power_of_uncorrelated_signals() -> None:
    rng = np.random.default_rng(3)
    a = (0.1 * rng.standard_normal(48000)).astype(np.float32)
    b = (0.1 * rng.standard_normal(48000)).astype(np.float32)
    mixed = equal_power_crossfade(a, b)
    for part in np.array_split(mixed, 8):
        assert np.sqrt(np.mean(part**2)) == pytest.approx(0.1, rel=0.06)
    assert mixed[0] == pytest.approx(a[0], abs=1e-3) and mixed[-1] == pytest.approx(b[-1], abs=1e-3)
    with pytest.raises(ValueError):
        equal_power_crossfade(a[:10], b[:11])


def test_silence_length() -> None:
    assert len(silence(220, RATE)) == 5280
    assert len(silence(0, RATE)) == 0


def test_detector_flags_phase_jump_but_not_continuous_audio() -> None:
    a = sine(180.0, 0.5, RATE, 0.3)
    b = sine(180.0, 0.5, RATE, 0.3, phase=2.0)
    jump = np.concatenate([a, b])
    assert discontinuity_score(jump, [len(a)]) > 50
    continuous = sine(180.0, 1.0, RATE, 0.3)
    assert discontinuity_score(continuous, [len(a), 7777]) < 1.5
    speech = speechlike(1.0, RATE)
    assert discontinuity_score(speech, list(range(500, 23500, 1000))) < 1.5
    level_step = np.concatenate([speech[:12000], speech[12000:] + 0.05])
    assert discontinuity_score(level_step, [12000]) > 20
    assert discontinuity_score(speech, []) == 0.0
