"""Small signal helpers for joining speech segments: silence detection, fades, crossfades."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from voxserve.audio.pcm import as_mono_float32
from voxserve.types import FloatAudio

_FRAME_MS = 10.0
_HOP_MS = 5.0
_EPS = 1e-12


def ms_to_samples(ms: float, sample_rate: int) -> int:
    return max(0, round(ms * sample_rate / 1000.0))


def silence(ms: float, sample_rate: int) -> FloatAudio:
    return np.zeros(ms_to_samples(ms, sample_rate), dtype=np.float32)


def frame_rms_db(samples: FloatAudio, frame: int, hop: int) -> npt.NDArray[np.float64]:
    """RMS level in dBFS of frames ``[i*hop, i*hop+frame)``; the last frame may be shorter."""
    n = len(samples)
    if n == 0:
        return np.zeros(0)
    count = max(1, -(-(n - frame) // hop) + 1) if n > frame else 1
    power = np.concatenate([[0.0], np.cumsum(samples.astype(np.float64) ** 2)])
    starts = np.arange(count) * hop
    ends = np.minimum(starts + frame, n)
    mean_power = (power[ends] - power[starts]) / np.maximum(ends - starts, 1)
    return np.asarray(10.0 * np.log10(mean_power + _EPS))


def trim_silence(
    samples: FloatAudio,
    sample_rate: int,
    threshold_db: float = -45.0,
    keep_ms: float = 25.0,
) -> tuple[int, int]:
    """``(start, end)`` sample indices of the sound region, widened by ``keep_ms`` each side.

    A region is where 10 ms frames (5 ms hop) exceed ``threshold_db`` dBFS RMS; the edges are
    refined to the first/last sample louder than the threshold inside the edge frames. The
    margin keeps weak onsets and releases (fricatives, breaths) that sit under the threshold.
    Returns ``(0, 0)`` when nothing is louder than the threshold.
    """
    x = as_mono_float32(samples)
    frame = max(1, ms_to_samples(_FRAME_MS, sample_rate))
    hop = max(1, ms_to_samples(_HOP_MS, sample_rate))
    levels = frame_rms_db(x, frame, hop)
    loud = np.flatnonzero(levels > threshold_db)
    if len(loud) == 0:
        return 0, 0
    level = 10.0 ** (threshold_db / 20.0)
    first_start = int(loud[0]) * hop
    first_frame = np.abs(x[first_start : first_start + frame])
    above = np.flatnonzero(first_frame > level)
    onset = first_start + (int(above[0]) if len(above) else 0)
    last_start = int(loud[-1]) * hop
    last_frame = np.abs(x[last_start : last_start + frame])
    above = np.flatnonzero(last_frame > level)
    offset = last_start + (int(above[-1]) + 1 if len(above) else len(last_frame))
    keep = ms_to_samples(keep_ms, sample_rate)
    return max(0, onset - keep), min(len(x), offset + keep)


def _ramp(n: int) -> npt.NDArray[np.float64]:
    """Raised-cosine ramp from 0 to 1 over ``n`` samples (both ends excluded)."""
    t = (np.arange(n, dtype=np.float64) + 0.5) / n
    return np.asarray(0.5 - 0.5 * np.cos(np.pi * t))


def fade_in(samples: FloatAudio, n: int) -> FloatAudio:
    """Copy of ``samples`` with a raised-cosine fade over its first ``n`` samples."""
    out = as_mono_float32(samples).copy()
    n = min(n, len(out))
    if n > 0:
        out[:n] *= _ramp(n).astype(np.float32)
    return out


def fade_out(samples: FloatAudio, n: int) -> FloatAudio:
    """Copy of ``samples`` with a raised-cosine fade over its last ``n`` samples."""
    out = as_mono_float32(samples).copy()
    n = min(n, len(out))
    if n > 0:
        out[len(out) - n :] *= _ramp(n)[::-1].astype(np.float32)
    return out


def equal_power_crossfade(a_tail: FloatAudio, b_head: FloatAudio) -> FloatAudio:
    """Mix the end of ``a`` into the start of ``b`` (same length) with sin/cos gains.

    Keeps the power of uncorrelated signals constant; on identical (correlated) signals it
    raises the level by up to 3 dB mid-fade, where :func:`equal_gain_crossfade` stays flat.
    """
    a = as_mono_float32(a_tail)
    b = as_mono_float32(b_head)
    if len(a) != len(b):
        raise ValueError(f"crossfade needs equal lengths, got {len(a)} and {len(b)}")
    if len(a) == 0:
        return np.zeros(0, dtype=np.float32)
    t = (np.arange(len(a), dtype=np.float64) + 0.5) / len(a)
    gain_b = np.sin(0.5 * np.pi * t)
    gain_a = np.cos(0.5 * np.pi * t)
    return (a * gain_a + b * gain_b).astype(np.float32)


def equal_gain_crossfade(a_tail: FloatAudio, b_head: FloatAudio) -> FloatAudio:
    """Mix with raised-cosine gains that sum to 1: right for correlated audio (same signal)."""
    a = as_mono_float32(a_tail)
    b = as_mono_float32(b_head)
    if len(a) != len(b):
        raise ValueError(f"crossfade needs equal lengths, got {len(a)} and {len(b)}")
    if len(a) == 0:
        return np.zeros(0, dtype=np.float32)
    gain_b = _ramp(len(a))
    return (a * (1.0 - gain_b) + b * gain_b).astype(np.float32)


def discontinuity_score(samples: FloatAudio, joins: list[int] | tuple[int, ...], radius: int = 480) -> float:
    """How click-like the signal is at ``joins`` (sample indices); the worst join counts.

    For each join: the largest second-difference magnitude within ±2 samples, divided by the
    largest one elsewhere within ±``radius`` samples (the signal's own sharpest feature nearby,
    e.g. a glottal pulse). A join that adds nothing sharper than the surrounding audio scores
    about 1 or less; a phase or level jump scores tens to hundreds. 0.0 with no joins.
    """
    x = as_mono_float32(samples).astype(np.float64)
    if len(x) < 3 or not joins:
        return 0.0
    d2 = np.abs(np.diff(x, n=2))  # d2[i] is centred on x[i + 1]
    floor = 1e-5  # about -100 dBFS: silence next to silence is not a click
    worst = 0.0
    for join in joins:
        centre = min(max(join - 1, 0), len(d2) - 1)
        near_lo, near_hi = max(0, centre - 2), centre + 3
        near = d2[near_lo:near_hi]
        around = np.concatenate([d2[max(0, centre - radius) : near_lo], d2[near_hi : centre + radius + 1]])
        reference = (float(around.max()) if len(around) else 0.0) + floor
        worst = max(worst, float(near.max()) / reference)
    return worst
