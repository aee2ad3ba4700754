"""Deterministic test signals for the audio tests."""

from __future__ import annotations

import io

import av
import numpy as np

from voxserve.audio.encode import Encoder
from voxserve.types import FloatAudio


def sine(freq: float, seconds: float, rate: int, amplitude: float = 0.5, phase: float = 0.0) -> FloatAudio:
    t = np.arange(round(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t + phase)).astype(np.float32)


def speechlike(seconds: float, rate: int, level_db: float = -20.0, seed: int = 0) -> FloatAudio:
    """Voiced-speech stand-in: harmonics of a wandering f0 under a ~4 Hz syllable envelope,
    with short gaps, scaled so its active part has RMS ``level_db`` dBFS."""
    rng = np.random.default_rng(seed)
    n = round(seconds * rate)
    t = np.arange(n) / rate
    f0 = 140 + 20 * np.sin(2 * np.pi * 0.7 * t) + 5 * rng.standard_normal(n).cumsum() / np.sqrt(n)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voice = sum(np.sin(k * phase) / k for k in range(1, 12))
    envelope = np.clip(np.sin(2 * np.pi * 3.7 * t), 0, None) ** 2
    gate = np.clip((np.sin(2 * np.pi * 0.45 * t) + 0.8) / 0.2, 0, 1)
    gaps = 0.5 - 0.5 * np.cos(np.pi * gate)
    x = voice * envelope * gaps
    active = np.abs(envelope * gaps) > 0.05
    rms = np.sqrt(np.mean(x[active] ** 2))
    return (x * (10 ** (level_db / 20) / rms)).astype(np.float32)


def peak_frequency(x: FloatAudio, rate: int) -> float:
    windowed = x * np.hanning(len(x))
    spectrum = np.abs(np.fft.rfft(windowed))
    return float(np.argmax(spectrum) * rate / len(x))


def decode_with_av(data: bytes) -> tuple[FloatAudio, int]:
    """Decode a whole encoded file to mono float32 and its rate."""
    container = av.open(io.BytesIO(data), mode="r")
    frames: list[np.ndarray] = []
    rate = 0
    for frame in container.decode(audio=0):
        rate = frame.sample_rate
        array = frame.to_ndarray()
        if array.dtype == np.int16:
            array = array.astype(np.float32) / 32768.0
        frames.append(array.reshape(-1) if array.shape[0] == 1 else array[0])
    container.close()
    return np.concatenate(frames).astype(np.float32), rate


def push_in_chunks(encoder: Encoder, x: FloatAudio, chunk: int) -> tuple[list[bytes], bytes]:
    """Feed ``x`` in ``chunk``-sample pieces; returns (bytes per encode call, bytes of finish)."""
    parts = [encoder.encode(x[i : i + chunk]) for i in range(0, len(x), chunk)]
    return parts, encoder.finish()
