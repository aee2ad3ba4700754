"""RIFF/WAVE headers for 16-bit mono PCM: a streamable form and an exact-size form."""

from __future__ import annotations

import struct

from voxserve.audio.pcm import as_mono_float32, float_to_s16
from voxserve.types import FloatAudio

# Sizes written when the length is not known yet. Players and decoders (ffmpeg, libsndfile,
# browsers) read until the end of the stream when the declared size runs past it.
STREAMING_SIZE = 0xFFFFFFFF

_BITS = 16
_HEADER_BYTES = 44


def wav_header(sample_rate: int, data_bytes: int | None = None, channels: int = 1) -> bytes:
    """A 44-byte PCM WAV header. ``data_bytes=None`` writes the streaming (unknown) sizes."""
    block_align = channels * _BITS // 8
    if data_bytes is None:
        riff_size = data_size = STREAMING_SIZE
    else:
        data_size = data_bytes
        riff_size = min(STREAMING_SIZE, data_bytes + _HEADER_BYTES - 8)
    return struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        riff_size,
        b"WAVE",
        b"fmt ",
        16,
        1,  # PCM
        channels,
        sample_rate,
        sample_rate * block_align,
        block_align,
        _BITS,
        b"data",
        data_size,
    )


def wav_bytes(samples: FloatAudio, sample_rate: int) -> bytes:
    """A complete WAV file with exact sizes, for whole-file responses."""
    pcm = float_to_s16(as_mono_float32(samples)).astype("<i2").tobytes()
    return wav_header(sample_rate, len(pcm)) + pcm
