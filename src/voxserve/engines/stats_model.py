"""Predicting a sentence's vocoder statistics from its frame-rate statistics, before decoding it.

A stream's first sentence is decoded in small windows, and Kokoro's vocoder normalizes each window
by statistics over time (see :mod:`voxserve.engines.vocoder_stats`). The exact statistics of the
whole sentence would make windowed audio match whole-sentence decoding, but they only exist once the
whole sentence is decoded. The sentence's frame-rate statistics, by contrast, come from a small graph
cheaply before the first window (``kokoro_stats.onnx``), and they predict the vocoder's well.

:class:`StatsRegression` is a ridge regression from the deviation of a sentence's frame-rate statistics
from its voice's average to the deviation of its vocoder statistics from that voice's average: the
slope is shared by all voices (fitted on a few sentences of each), the averages are each voice's.
First-segment PESQ-wb against the whole decode is measured by ``voxserve eval`` (docs/benchmarks.md).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxserve.engines.vocoder_stats import load_tagged, save_tagged
from voxserve.engines.voices import parse_blend

Vector = npt.NDArray[np.float64]
Stored = npt.NDArray[np.float32]  # what the model keeps: ~30 MB for 54 voices (float64 would double it)
Means = Mapping[str, npt.NDArray[np.floating]]


def flatten(means: Means, names: Sequence[str]) -> Vector:
    """The named statistics as one vector, in ``names`` order."""
    return np.concatenate([np.asarray(means[name], dtype=np.float64).reshape(-1) for name in names])


class StatsRegression:
    """Within-voice ridge regression from frame-rate to vocoder statistics; thread-safe.

    Statistics are given as the decoder's input dicts (``stat_in_<k>`` → [1, channels, 1]). ``ridge``
    is the penalty per feature (features are standardized, so each sentence's squared norm is about the
    number of features). :meth:`fit` takes a few sentences of each voice and keeps each voice's
    averages (a blend gets its voices', weighted); :meth:`predict` returns None for a voice without them.
    """

    def __init__(self, ridge: float = 0.1) -> None:
        self.ridge = ridge
        self._lock = threading.Lock()
        self._arrays: dict[str, Stored] = {}
        self._voices: dict[str, tuple[Stored, Stored]] = {}
        self._x_names: list[str] = []
        self._y_sizes: dict[str, int] = {}

    def fit(self, sentences: Mapping[str, Sequence[tuple[Means, Means]]]) -> None:
        """Fit on each voice's sentences, given as (frame-rate statistics, exact vocoder statistics) of
        the whole decode; each voice's sentences are centered on its own averages, so the slope is the
        one within a voice, pooled over voices. Every voice given is then known, with those averages."""
        pairs = [pair for spoken in sentences.values() for pair in spoken]
        if len(pairs) <= len(sentences):
            raise ValueError("need a voice with two or more sentences to fit the regression")
        x_names = sorted(pairs[0][0])
        y_sizes = {name: int(np.size(value)) for name, value in sorted(pairs[0][1].items())}
        voices: dict[str, tuple[Stored, Stored]] = {}
        xs, ys, lows = [], [], []
        for voice, spoken in sentences.items():
            x = np.stack([flatten(frame, x_names) for frame, _ in spoken])
            y = np.stack([flatten(vocoder, list(y_sizes)) for _, vocoder in spoken])
            x_mean, y_mean = x.mean(axis=0), y.mean(axis=0)
            voices[voice] = (x_mean.astype(np.float32), y_mean.astype(np.float32))
            xs.append(x - x_mean)
            ys.append(y - y_mean)
            lows.append(y.min(axis=0))
        x_dev, y_dev, low = np.concatenate(xs), np.concatenate(ys), np.min(lows, axis=0)
        spread = x_dev.std(axis=0)
        floor = 1e-3 * float(np.median(spread[spread > 0])) if np.any(spread > 0) else 1.0
        scale = np.maximum(spread, floor)  # a feature that hardly varies must not dominate
        z = x_dev / scale
        gram = z @ z.T + self.ridge * z.shape[1] * np.eye(len(z))
        coef = np.linalg.solve(gram, y_dev)  # dual form: few sentences, many features
        # a statistic that was never negative (a variance) must not be predicted negative
        floor_y = np.where(low >= 0, 0.5 * low, -np.inf)
        with self._lock:
            self._arrays = {k: v.astype(np.float32) for k, v in (("scale", scale), ("z", z), ("coef", coef))}
            self._arrays["low"] = floor_y.astype(np.float32)
            self._x_names, self._y_sizes, self._voices = x_names, y_sizes, voices

    def _averages(self, voice: str) -> tuple[Stored, Stored] | None:
        """A voice's averages; for a blend (``af_heart:0.7+am_adam:0.3``), its voices' weighted by the
        blend. Called with the lock held."""
        if voice in self._voices:
            return self._voices[voice]
        try:
            parts = parse_blend(voice)
        except ValueError:
            return None
        if not all(name in self._voices for name, _ in parts):
            return None
        x = sum(weight * self._voices[name][0] for name, weight in parts)
        y = sum(weight * self._voices[name][1] for name, weight in parts)
        return np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.float32)

    def knows(self, voice: str) -> bool:
        with self._lock:
            return self._averages(voice) is not None

    def predict(self, voice: str, frame: Means) -> dict[str, npt.NDArray[np.float64]] | None:
        """A sentence's vocoder statistics from its frame-rate ones, as decoder inputs; None for a voice
        (or a blend's voice) without averages."""
        with self._lock:
            entry, arrays, x_names, y_sizes = self._averages(voice), self._arrays, self._x_names, self._y_sizes
        if entry is None:
            return None
        x_mean, y_mean = entry
        z = ((flatten(frame, x_names) - x_mean) / arrays["scale"]).astype(np.float32)
        predicted = np.maximum(y_mean + (arrays["z"] @ z) @ arrays["coef"], arrays["low"]).astype(np.float64)
        cuts = np.cumsum(list(y_sizes.values()))[:-1]
        return {name: part.reshape(1, -1, 1) for name, part in zip(y_sizes, np.split(predicted, cuts), strict=True)}

    def save(self, path: Path, tag: str) -> None:
        """Write the fit and every voice's averages to ``path`` (.npz, float32), marked with ``tag``."""
        with self._lock:
            data: dict[str, npt.NDArray[np.generic]] = {f"fit|{k}": v for k, v in self._arrays.items()}
            for voice, (x_mean, y_mean) in self._voices.items():
                data[f"x|{voice}"], data[f"y|{voice}"] = x_mean, y_mean
            data["x_names"] = np.array(self._x_names)
            data["y_names"] = np.array(list(self._y_sizes))
            data["y_sizes"] = np.array(list(self._y_sizes.values()))
        save_tagged(path, tag, data)

    def load(self, path: Path, tag: str) -> bool:
        """Take what ``path`` holds if it was saved with ``tag``; False if absent, stale or incomplete."""
        data = load_tagged(path, tag)
        if data is None:
            return False
        try:
            arrays = {k.split("|", 1)[1]: v.astype(np.float32) for k, v in data.items() if k.startswith("fit|")}
            voices = {
                k[2:]: (v.astype(np.float32), data["y|" + k[2:]].astype(np.float32))
                for k, v in data.items()
                if k.startswith("x|")
            }
            x_names = [str(n) for n in data["x_names"]]
            y_sizes = {str(n): int(s) for n, s in zip(data["y_names"], data["y_sizes"], strict=True)}
        except (KeyError, ValueError):
            return False
        if set(arrays) != {"scale", "z", "coef", "low"}:
            return False
        with self._lock:
            self._arrays, self._voices, self._x_names, self._y_sizes = arrays, voices, x_names, y_sizes
        return True
