"""One-shot and streaming resampling: lengths, pitch, anti-aliasing, seamless chunking."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.audio import StreamingResampler, output_length, resample

from ._signals import peak_frequency, sine

RATES = [8000, 16000, 22050, 24000, 44100, 48000]
PAIRS = [(a, b) for a in RATES for b in RATES if a != b]


@pytest.mark.parametrize(("from_rate", "to_rate"), PAIRS)
def test_length_pitch_and_level_survive(from_rate: int, to_rate: int) -> None:
    x = sine(1000.0, 0.5, from_rate, amplitude=0.5)
    y = resample(x, from_rate, to_rate)
    assert y.dtype == np.float32
    assert len(y) == output_length(len(x), from_rate, to_rate)
    assert abs(len(y) - len(x) * to_rate / from_rate) < 1
    assert peak_frequency(y, to_rate) == pytest.approx(1000.0, abs=to_rate / len(y) + 1)
    middle = y[len(y) // 8 : -len(y) // 8]
    assert np.sqrt(np.mean(middle**2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


def test_downsampling_removes_content_above_new_nyquist() -> None:
    x = sine(6000.0, 0.5, 24000, amplitude=0.5)  # would alias to 2 kHz at 8 kHz
    y = resample(x, 24000, 8000)
    middle = y[400:-400]
    assert 20 * np.log10(np.sqrt(np.mean(middle**2)) / 0.35) < -40


@pytest.mark.parametrize(("from_rate", "to_rate"), [(24000, 8000), (24000, 22050), (22050, 24000), (24000, 48000)])
def test_streaming_equals_one_shot(from_rate: int, to_rate: int) -> None:
    rng = np.random.default_rng(from_rate + to_rate)
    x = (0.2 * rng.standard_normal(from_rate)).astype(np.float32)
    resampler = StreamingResampler(from_rate, to_rate)
    outputs = []
    position = 0
    while position < len(x):
        size = int(rng.integers(1, 2500))
        outputs.append(resampler.process(x[position : position + size]))
        position += size
    outputs.append(resampler.flush())
    streamed = np.concatenate(outputs)
    one_shot = resample(x, from_rate, to_rate)
    assert len(streamed) == len(one_shot)
    assert np.max(np.abs(streamed - one_shot)) < 1e-5


def test_streaming_holds_back_only_a_few_samples() -> None:
    resampler = StreamingResampler(24000, 8000)
    out = resampler.process(np.zeros(2400, dtype=np.float32))
    assert 800 - len(out) <= 12  # ~1.5 ms at 8 kHz
    resampler2 = StreamingResampler(24000, 22050)
    out2 = resampler2.process(np.zeros(2400, dtype=np.float32))
    assert 2205 - len(out2) <= 12


def test_same_rate_is_identity() -> None:
    x = sine(440.0, 0.1, 24000)
    assert np.array_equal(resample(x, 24000, 24000), x)
    resampler = StreamingResampler(24000, 24000)
    assert np.array_equal(resampler.process(x), x)
    assert len(resampler.flush()) == 0


def test_process_after_flush_is_an_error() -> None:
    resampler = StreamingResampler(24000, 16000)
    resampler.flush()
    with pytest.raises(RuntimeError):
        resampler.process(np.zeros(10, dtype=np.float32))
