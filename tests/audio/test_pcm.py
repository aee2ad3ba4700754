"""Integer conversions and G.711 μ-law."""

from __future__ import annotations

import io

import av
import numpy as np

from voxserve.audio import float_to_s16, mulaw_decode, mulaw_encode, s16_to_float

from ._signals import sine


def test_s16_round_trip_error_is_half_a_step() -> None:
    x = np.linspace(-1, 1, 10001, dtype=np.float32)
    assert np.max(np.abs(s16_to_float(float_to_s16(x)) - x)) <= 0.5 / 32767 + 1e-7


def test_mulaw_error_bound_and_snr() -> None:
    x = sine(440.0, 1.0, 8000, amplitude=0.5)
    y = mulaw_decode(mulaw_encode(x))
    error = y - x
    # Largest segment step is 256/8192 of full scale in 14-bit terms: half of it bounds the error.
    assert np.max(np.abs(error)) <= 0.0165
    # Companding keeps the error proportional to the signal: ~38 dB SNR for any level.
    snr = 10 * np.log10(np.mean(x**2) / np.mean(error**2))
    assert snr > 35
    quiet = x * 0.01
    quiet_error = mulaw_decode(mulaw_encode(quiet)) - quiet
    assert 10 * np.log10(np.mean(quiet**2) / np.mean(quiet_error**2)) > 25


def test_mulaw_codes_match_ffmpeg() -> None:
    x = np.linspace(-1, 1, 4001, dtype=np.float32)
    codes = mulaw_encode(x)
    container = av.open(io.BytesIO(codes.tobytes()), mode="r", format="mulaw", options={"sample_rate": "8000"})
    ffmpeg = np.concatenate([f.to_ndarray().reshape(-1) for f in container.decode(audio=0)])
    ours = np.rint(mulaw_decode(codes) * 32768).astype(np.int64)
    assert np.array_equal(ours, ffmpeg.astype(np.int64))
    # Below the top code (32124) the error stays within half of the largest step.
    inside = np.abs(x) <= 32124 / 32768
    assert np.max(np.abs(ours / 32768 - x)[inside]) <= 0.0165


def test_mulaw_silence_is_0xff() -> None:
    assert set(mulaw_encode(np.zeros(10, dtype=np.float32)).tolist()) == {0xFF}
