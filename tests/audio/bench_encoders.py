"""Encoder speed and first-bytes latency (run: python -m tests.audio.bench_encoders).

Not collected by pytest (no ``test_`` prefix): it measures, it does not assert.
"""

from __future__ import annotations

import struct
import time

import numpy as np

from voxserve.audio import make_encoder, supported_formats

from ._signals import speechlike

RATE = 24000


def _audio_bytes(fmt: str, data: bytes) -> int:
    """Bytes that carry audio (Ogg pages with a granule position; everything else for other formats)."""
    if fmt != "opus":
        return len(data) if fmt != "wav" else max(0, len(data) - 44)
    total = 0
    offset = 0
    while offset + 27 <= len(data) and data[offset : offset + 4] == b"OggS":
        (granule,) = struct.unpack_from("<q", data, offset + 6)
        segments = data[offset + 26]
        size = 27 + segments + sum(data[offset + 27 : offset + 27 + segments])
        if granule > 0:
            total += size
        offset += size
    return total


def speed(fmt: str, x: np.ndarray, chunk: int) -> float:
    best = float("inf")
    for _ in range(3):
        encoder = make_encoder(fmt, RATE)
        start = time.perf_counter()
        for i in range(0, len(x), chunk):
            encoder.encode(x[i : i + chunk])
        encoder.finish()
        best = min(best, time.perf_counter() - start)
    return len(x) / RATE / best


def first_bytes_ms(fmt: str, x: np.ndarray, step: int) -> float:
    encoder = make_encoder(fmt, RATE)
    produced = b""
    for i in range(0, len(x), step):
        produced += encoder.encode(x[i : i + step])
        if _audio_bytes(fmt, produced) > 0:
            return (i + step) / RATE * 1000
    return float("nan")


def main() -> None:
    x = speechlike(10.0, RATE, -20.0)
    print(f"{'format':7} {'x RT (200 ms chunks)':>21} {'x RT (whole)':>13} {'first audio bytes after':>24}")
    for fmt in supported_formats():
        streamed = speed(fmt, x, RATE // 5)
        whole = speed(fmt, x, len(x))
        latency = first_bytes_ms(fmt, x, RATE // 200)
        print(f"{fmt:7} {streamed:21.0f} {whole:13.0f} {latency:21.0f} ms")


if __name__ == "__main__":
    main()
