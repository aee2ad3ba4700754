"""Loudness stage: consistent level, no pumping, peak ceiling, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.audio import LoudnessNormalizer, rms_db, speech_level_db

from ._signals import sine, speechlike

RATE = 24000
CHUNK = 4800  # 200 ms


def _run(normalizer: LoudnessNormalizer, x: np.ndarray) -> tuple[np.ndarray, list[float]]:
    outputs, gains = [], []
    for i in range(0, len(x), CHUNK):
        outputs.append(normalizer.process(x[i : i + CHUNK]))
        gains.append(normalizer.gain_db)
    return np.concatenate(outputs), gains


def test_rms_db() -> None:
    assert rms_db(sine(1000.0, 1.0, RATE, amplitude=1.0)) == pytest.approx(-3.01, abs=0.01)
    assert rms_db(np.zeros(100, dtype=np.float32)) == -120.0
    assert speech_level_db(np.zeros(RATE, dtype=np.float32), RATE) is None


def test_quiet_and_loud_voices_come_out_at_the_same_level() -> None:
    quiet, _ = _run(LoudnessNormalizer(RATE), speechlike(6.0, RATE, -35.0, seed=2))
    loud, _ = _run(LoudnessNormalizer(RATE), speechlike(6.0, RATE, -10.0, seed=3))
    quiet_db, loud_db = speech_level_db(quiet, RATE), speech_level_db(loud, RATE)
    assert quiet_db is not None and loud_db is not None
    assert abs(quiet_db - loud_db) < 2.0
    assert abs(quiet_db + 20.0) < 2.0
    for y in (quiet, loud):
        assert np.abs(y).max() <= 10 ** (-1 / 20) + 1e-6


def test_gain_moves_slowly_and_not_during_pauses() -> None:
    x = np.concatenate(
        [speechlike(3.0, RATE, -20.0, seed=4), np.zeros(RATE, dtype=np.float32), speechlike(3.0, RATE, -32.0, seed=5)]
    )
    normalizer = LoudnessNormalizer(RATE, slew_db_per_s=6.0)
    _, gains = _run(normalizer, x)
    steps = np.abs(np.diff(gains))
    assert steps.max() <= 6.0 * CHUNK / RATE + 1e-9
    pause = slice(3 * RATE // CHUNK, 4 * RATE // CHUNK)
    assert np.ptp(gains[pause]) == 0.0
    assert gains[-1] > gains[pause.start] + 3.0  # it does follow the quieter speaker, slowly


def test_peaks_stay_under_the_ceiling_when_gain_is_high() -> None:
    x = speechlike(3.0, RATE, -35.0, seed=6)
    x[RATE] = 0.5  # a sudden spike that +15 dB would push far past full scale
    y, _ = _run(LoudnessNormalizer(RATE), x)
    assert np.abs(y).max() <= 10 ** (-1 / 20) + 1e-6


def test_output_is_deterministic() -> None:
    x = speechlike(2.0, RATE, -27.0, seed=7)
    first, _ = _run(LoudnessNormalizer(RATE), x)
    second, _ = _run(LoudnessNormalizer(RATE), x)
    assert np.array_equal(first, second)


def test_leading_silence_waits_for_speech() -> None:
    normalizer = LoudnessNormalizer(RATE)
    out = normalizer.process(np.zeros(CHUNK, dtype=np.float32))
    assert np.all(out == 0) and normalizer.gain_db == 0.0
    normalizer.process(speechlike(0.2, RATE, -30.0, seed=8))
    assert normalizer.gain_db > 5.0


def test_a_peak_at_the_start_of_a_chunk_does_not_collapse_the_gain() -> None:
    from voxserve.audio.loudness import LoudnessNormalizer

    rate = 24_000
    rng = np.random.default_rng(3)
    norm = LoudnessNormalizer(rate)
    quiet = (0.02 * rng.standard_normal(rate // 5)).astype(np.float32)
    norm.process(quiet)  # sets a high gain for quiet speech
    spiky = (0.02 * rng.standard_normal(rate // 5)).astype(np.float32)
    spiky[0] = 0.99  # over the ceiling at the very first sample
    norm.process(spiky)
    after = norm.process((0.02 * rng.standard_normal(rate // 5)).astype(np.float32))
    assert float(np.sqrt(np.mean(after**2))) > 0.02  # still audible, not pushed down by ~60 dB
