"""Percentiles and the summary of one load level (one concurrency or arrival rate)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from voxserve.benchmark.records import RequestRecord

PERCENTILES = (50, 90, 99)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) with linear interpolation between closest ranks (NumPy's default).

    Raises ``ValueError`` on an empty sequence: a percentile of nothing has no value.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Spread:
    """P50/P90/P99 of one quantity (``None`` each when nothing was measured)."""

    p50: float | None
    p90: float | None
    p99: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(None, None, None)
        return cls(*(percentile(values, q) for q in PERCENTILES))


@dataclass(frozen=True)
class LevelSummary:
    """A load level: its requests' first audio, last audio, real-time factor, underruns, throughput."""

    label: str
    concurrency: int
    requests: int
    errors: int
    first_audio_s: Spread
    last_audio_s: Spread
    rtf: Spread
    stall_rate: float  # share of completed requests that underran at least once
    underrun_s_total: float
    audio_s_total: float
    wall_s: float
    throughput: float  # seconds of audio received per second of wall time
    requests_per_s: float
    failed_after_s: Spread  # how long the failed requests took to fail (a refusal: at once)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def summarize(label: str, concurrency: int, records: Sequence[RequestRecord], wall_s: float) -> LevelSummary:
    """Summarize the requests of one level, run over ``wall_s`` seconds."""
    done = [r for r in records if r.ok]
    audio = sum(r.audio_s for r in done)
    return LevelSummary(
        label=label,
        concurrency=concurrency,
        requests=len(records),
        errors=len(records) - len(done),
        first_audio_s=Spread.of([r.first_audio_s for r in done if r.first_audio_s is not None]),
        last_audio_s=Spread.of([r.last_audio_s for r in done if r.last_audio_s is not None]),
        rtf=Spread.of([r.rtf for r in done if r.rtf is not None]),
        stall_rate=(sum(1 for r in done if r.stalled) / len(done)) if done else 0.0,
        underrun_s_total=sum(r.underrun_s for r in done),
        audio_s_total=audio,
        wall_s=wall_s,
        throughput=audio / wall_s if wall_s > 0 else 0.0,
        requests_per_s=len(done) / wall_s if wall_s > 0 else 0.0,
        failed_after_s=Spread.of([r.failed_after_s for r in records if not r.ok and r.failed_after_s is not None]),
    )
