"""Streaming fidelity and seams: streamed audio against the same text synthesized whole.

PESQ (wide band) and STOI both work at 16 kHz on signals that line up sample for sample; streamed and
whole audio may differ by a few samples of delay and a ragged end, so the test signal is shifted to the
lag of the cross-correlation peak and both are cut to their common length first.

A seam is where one streamed chunk ends and the next begins. A click there shows as a sample-to-sample
jump much larger than the signal's own steps around it; :func:`seams` reports that ratio at each join,
and at random places inside chunks as the baseline a seamless signal would give.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.signal import correlate

from voxserve.audio import resample

SCORE_RATE = 16_000
CLICK_RATIO = 4.0  # a join's jump this many times the local step counts as a click


def _align_global(
    reference: np.ndarray, test: np.ndarray, sample_rate: int, max_lag_s: float
) -> tuple[np.ndarray, np.ndarray]:
    n = min(len(reference), len(test))
    if n == 0:
        return reference[:0], test[:0]
    max_lag = int(max_lag_s * sample_rate)
    corr = correlate(test[:n].astype(np.float64), reference[:n].astype(np.float64), mode="full", method="fft")
    lags = np.arange(-n + 1, n)
    window = np.abs(lags) <= max_lag
    lag = int(lags[window][np.argmax(corr[window])])
    if lag > 0:
        test = test[lag:]
    elif lag < 0:
        reference = reference[-lag:]
    n = min(len(reference), len(test))
    return reference[:n], test[:n]


def voiced_spans(samples: np.ndarray, sample_rate: int, min_gap_s: float = 0.08) -> list[tuple[int, int]]:
    """(start, end) of stretches of sound separated by pauses of at least ``min_gap_s`` (frames of
    10 ms more than 40 dB below the loudest count as pause)."""
    frame = sample_rate // 100
    count = len(samples) // frame
    if count == 0:
        return []
    rms = np.sqrt(np.mean(samples[: count * frame].reshape(count, frame).astype(np.float64) ** 2, axis=1))
    loud = rms > rms.max() * 10 ** (-40 / 20)
    spans: list[tuple[int, int]] = []
    gap = int(min_gap_s * 100)
    start = None
    quiet = 0
    for i, on in enumerate(loud):
        if on:
            if start is None:
                start = i
            quiet = 0
        elif start is not None:
            quiet += 1
            if quiet >= gap:
                spans.append((start * frame, (i - quiet + 1) * frame))
                start, quiet = None, 0
    if start is not None:
        spans.append((start * frame, (count - quiet) * frame))
    return spans


def trim_silence(samples: np.ndarray, sample_rate: int, margin_s: float = 0.02) -> np.ndarray:
    """``samples`` from ``margin_s`` before the first voiced stretch to as much after the last one: for
    comparing runtimes that keep different amounts of leading and trailing silence."""
    spans = voiced_spans(samples, sample_rate)
    if not spans:
        return samples
    margin = int(margin_s * sample_rate)
    return samples[max(0, spans[0][0] - margin) : spans[-1][1] + margin]


def align(
    reference: np.ndarray, test: np.ndarray, sample_rate: int, max_lag_s: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """``reference`` and ``test`` brought into line and cut to equal length.

    Streamed and whole synthesis may pause for different lengths between clauses; when both have the
    same number of voiced stretches, each pair is aligned on its own (the pauses' lengths are not
    scored), otherwise the whole signals are shifted to the cross-correlation peak within ``max_lag_s``.
    """
    ref_spans, test_spans = voiced_spans(reference, sample_rate), voiced_spans(test, sample_rate)
    if len(ref_spans) < 2 or len(ref_spans) != len(test_spans):
        return _align_global(reference, test, sample_rate, max_lag_s)
    margin = int(0.02 * sample_rate)
    pairs = [
        _align_global(
            reference[max(0, a - margin) : b + margin], test[max(0, c - margin) : d + margin], sample_rate, max_lag_s
        )
        for (a, b), (c, d) in zip(ref_spans, test_spans, strict=True)
    ]
    return np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs])


def pesq_stoi(reference: np.ndarray, test: np.ndarray, sample_rate: int) -> tuple[float, float]:
    """PESQ-WB and STOI of ``test`` against ``reference`` (both at ``sample_rate``), after alignment."""
    from pesq import pesq
    from pystoi import stoi

    ref16 = resample(reference, sample_rate, SCORE_RATE).astype(np.float64)
    test16 = resample(test, sample_rate, SCORE_RATE).astype(np.float64)
    ref16, test16 = align(ref16, test16, SCORE_RATE)
    return float(pesq(SCORE_RATE, ref16, test16, "wb")), float(stoi(ref16, test16, SCORE_RATE))


@dataclass(frozen=True)
class SeamStats:
    joins: int
    median_ratio: float | None
    p99_ratio: float | None
    clicks: int  # joins whose jump is over CLICK_RATIO times the local step
    baseline_median_ratio: float | None
    baseline_click_share: float | None  # the same test at places that are not joins


def _jump_ratio(samples: np.ndarray, at: int, half_window: int) -> float | None:
    """|x[at] - x[at-1]| over the median step in the ``half_window`` samples either side (a floor of
    1e-4 keeps silence from dividing by zero: a jump in silence is audible)."""
    lo, hi = max(1, at - half_window), min(len(samples), at + half_window)
    if at < 1 or at >= len(samples) or hi - lo < 8:
        return None
    local = max(float(np.median(np.abs(np.diff(samples[lo - 1 : hi])))), 1e-4)
    return float(abs(samples[at] - samples[at - 1])) / local


def seams(samples: np.ndarray, joins: Sequence[int], sample_rate: int, seed: int = 0) -> SeamStats:
    """Discontinuity statistics at ``joins`` (indices where a new chunk starts) and at as many random
    non-join places (the baseline)."""
    half = max(8, sample_rate // 400)  # 2.5 ms either side
    ratios = [r for r in (_jump_ratio(samples, j, half) for j in joins) if r is not None]
    rng = random.Random(seed)
    join_set = set(joins)
    tries = (rng.randrange(half, max(half + 1, len(samples) - half)) for _ in range(max(50, 4 * len(joins))))
    places = [p for p in tries if all(abs(p - j) > half for j in join_set)]
    base = [r for r in (_jump_ratio(samples, p, half) for p in places) if r is not None]
    return SeamStats(
        joins=len(joins),
        median_ratio=float(np.median(ratios)) if ratios else None,
        p99_ratio=float(np.percentile(ratios, 99)) if ratios else None,
        clicks=sum(1 for r in ratios if r > CLICK_RATIO),
        baseline_median_ratio=float(np.median(base)) if base else None,
        baseline_click_share=(sum(1 for r in base if r > CLICK_RATIO) / len(base)) if base else None,
    )


def dnsmos(samples: np.ndarray, sample_rate: int) -> dict[str, float]:
    """DNSMOS P.835 (signal, background, overall) and P.808 scores of ``samples``, via ``speechmos``."""
    from speechmos import dnsmos as model

    audio = np.clip(resample(samples, sample_rate, SCORE_RATE), -1.0, 1.0).astype(np.float32)
    scores = model.run(audio, SCORE_RATE)
    return {key: float(scores[key]) for key in ("ovrl_mos", "sig_mos", "bak_mos", "p808_mos")}
