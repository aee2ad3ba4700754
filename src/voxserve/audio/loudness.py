"""Level measurement and a slow, deterministic loudness stage for streamed speech.

:class:`LoudnessNormalizer` keeps a running estimate of the speech level (mean power of the
frames that carry speech, smoothed over a few seconds), steers a gain towards ``target_db``
with a limited slew rate, ramps the gain smoothly inside each chunk, and keeps peaks under
``peak_db``. Pauses do not move the gain, so there is no pumping between words.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from voxserve.audio.dsp import frame_rms_db, ms_to_samples
from voxserve.audio.pcm import as_mono_float32
from voxserve.types import FloatAudio

_FRAME_MS = 20.0
_EPS = 1e-12


def rms_db(samples: npt.ArrayLike) -> float:
    """RMS level in dBFS (−120 for silence or empty input)."""
    x = as_mono_float32(samples).astype(np.float64)
    if len(x) == 0:
        return -120.0
    return max(-120.0, 10.0 * math.log10(float(np.mean(x * x)) + _EPS))


def speech_level_db(
    samples: FloatAudio, sample_rate: int, gate_db: float = -50.0, relative_db: float = 25.0
) -> float | None:
    """Power-mean level of the frames within ``relative_db`` of the loudest and above ``gate_db``.

    ``None`` when no frame passes (a pause or silence).
    """
    frame = max(1, ms_to_samples(_FRAME_MS, sample_rate))
    levels = frame_rms_db(as_mono_float32(samples), frame, frame)
    if len(levels) == 0:
        return None
    gate = max(gate_db, float(levels.max()) - relative_db)
    speech = levels[levels > gate]
    if len(speech) == 0:
        return None
    return 10.0 * math.log10(float(np.mean(10.0 ** (speech / 10.0))) + _EPS)


class LoudnessNormalizer:
    """One per stream. ``process`` returns the chunk with the gain applied (same length)."""

    def __init__(
        self,
        sample_rate: int,
        *,
        target_db: float = -20.0,
        peak_db: float = -1.0,
        max_gain_db: float = 24.0,
        min_gain_db: float = -12.0,
        slew_db_per_s: float = 6.0,
        smoothing_s: float = 3.0,
        gate_db: float = -50.0,
    ) -> None:
        self.sample_rate = sample_rate
        self.target_db = target_db
        self._peak = 10.0 ** (peak_db / 20.0)
        self._gain_range = (min_gain_db, max_gain_db)
        self._slew = slew_db_per_s
        self._smoothing_s = smoothing_s
        self._gate_db = gate_db
        self._level_power: float | None = None  # smoothed speech power (linear)
        self._gain_db: float | None = None  # gain at the end of the last chunk

    @property
    def gain_db(self) -> float:
        return self._gain_db if self._gain_db is not None else 0.0

    def process(self, samples: npt.ArrayLike) -> FloatAudio:
        x = as_mono_float32(samples)
        if len(x) == 0:
            return x.copy()
        duration = len(x) / self.sample_rate
        level = speech_level_db(x, self.sample_rate, self._gate_db)
        previous = self._gain_db
        if level is not None:
            power = 10.0 ** (level / 10.0)
            if self._level_power is None:
                self._level_power = power
            else:
                keep = math.exp(-duration / self._smoothing_s)
                self._level_power = keep * self._level_power + (1.0 - keep) * power
            smoothed_db = 10.0 * math.log10(self._level_power + _EPS)
            desired = min(max(self.target_db - smoothed_db, self._gain_range[0]), self._gain_range[1])
            if previous is None:
                previous = new = desired  # first speech: start at the right level, no ramp
            else:
                step = self._slew * duration
                new = previous + min(max(desired - previous, -step), step)
        else:
            previous = new = previous if previous is not None else 0.0
        start_gain = 10.0 ** (previous / 20.0)
        end_gain = self._limit_end_gain(x, start_gain, 10.0 ** (new / 20.0))
        self._gain_db = 20.0 * math.log10(end_gain)
        if level is None and self._level_power is None:
            self._gain_db = None  # still waiting for the first speech
        ramp = np.linspace(start_gain, end_gain, len(x) + 1, dtype=np.float64)[1:]
        y = x.astype(np.float64) * ramp
        return np.clip(y, -self._peak, self._peak).astype(np.float32)

    def _limit_end_gain(self, x: FloatAudio, start: float, end: float) -> float:
        """Lower ``end`` so the linear gain ramp keeps every sample under the peak ceiling."""
        magnitude = np.abs(x.astype(np.float64))
        t = np.arange(1, len(x) + 1, dtype=np.float64) / len(x)
        gains = start + (end - start) * t
        over = magnitude * gains > self._peak
        if not over.any():
            return end
        allowed = start + (self._peak / np.maximum(magnitude[over], _EPS) - start) / t[over]
        # A peak right at the chunk start can't be fixed by the end gain (the clip below catches it);
        # never let one such sample slam the gain down: the limiter may cut at most 6 dB per chunk.
        floor = 0.5 * min(start, end)
        return float(max(min(end, float(allowed.min())), floor))
