"""Decoding helpers for checking what the server sent."""

from __future__ import annotations

import io

import av
import numpy as np


def pcm_seconds(data: bytes, rate: int) -> float:
    return len(data) / 2 / rate


def pcm_rms(data: bytes) -> float:
    samples = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0


def decoded_seconds(data: bytes) -> float:
    """Duration of an encoded file (wav/mp3/opus/flac/aac) by decoding every frame."""
    total = 0
    rate = 0
    with av.open(io.BytesIO(data), mode="r") as container:
        for frame in container.decode(audio=0):
            total += frame.samples
            rate = frame.sample_rate
    return total / rate if rate else 0.0
