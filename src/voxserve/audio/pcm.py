"""Sample conversions: float32 ⇄ signed 16-bit PCM, and G.711 μ-law.

Floats are clipped to [-1, 1] before any integer conversion, so loud input saturates
instead of wrapping around.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from voxserve.errors import InvalidInput
from voxserve.types import FloatAudio

_S16_MAX = 32767
_MULAW_BIAS = 0x84
_MULAW_CLIP = 32635


def as_mono_float32(samples: npt.ArrayLike) -> FloatAudio:
    """Return ``samples`` as a contiguous 1-D float32 array (no copy when it already is one)."""
    array = np.asarray(samples, dtype=np.float32)
    if array.ndim != 1:
        raise InvalidInput(f"audio must be a 1-D mono array, got shape {array.shape}")
    return np.ascontiguousarray(array)


def float_to_s16(samples: FloatAudio) -> npt.NDArray[np.int16]:
    """Clip to [-1, 1] and scale to int16 with rounding."""
    clipped = np.clip(samples, -1.0, 1.0)
    return np.rint(clipped * _S16_MAX).astype(np.int16)


def s16_to_float(samples: npt.NDArray[np.int16]) -> FloatAudio:
    return (samples.astype(np.float32) / _S16_MAX).astype(np.float32)


def mulaw_encode(samples: FloatAudio) -> npt.NDArray[np.uint8]:
    """G.711 μ-law: 14-bit magnitude companded into sign, 3-bit segment and 4-bit step."""
    pcm = float_to_s16(samples).astype(np.int32)
    negative = pcm < 0
    magnitude = np.minimum(np.abs(pcm), _MULAW_CLIP) + _MULAW_BIAS
    # The segment is the position of the highest set bit above bit 7 (magnitude >= 0x84 > 0x80).
    segment = np.floor(np.log2(magnitude)).astype(np.int32) - 7
    segment = np.clip(segment, 0, 7)
    step = (magnitude >> (segment + 3)) & 0x0F
    code = (negative.astype(np.int32) << 7) | (segment << 4) | step
    return (~code & 0xFF).astype(np.uint8)


def mulaw_decode(codes: npt.NDArray[np.uint8]) -> FloatAudio:
    """Inverse of :func:`mulaw_encode` (to float32 in [-1, 1])."""
    inverted = (~codes.astype(np.int32)) & 0xFF
    negative = (inverted & 0x80) != 0
    segment = (inverted >> 4) & 0x07
    step = inverted & 0x0F
    magnitude = (((step << 3) + _MULAW_BIAS) << segment) - _MULAW_BIAS
    pcm = np.where(negative, -magnitude, magnitude)
    return (pcm.astype(np.float32) / 32768.0).astype(np.float32)
