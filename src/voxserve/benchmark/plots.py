"""The bench's PNG plots (matplotlib, drawn off-screen): one line per voice, one point per load level."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxserve.benchmark.records import RequestRecord
from voxserve.benchmark.soak import SoakResult
from voxserve.benchmark.stats import LevelSummary


@dataclass(frozen=True)
class Level:
    """One measured level of one voice: its summary and its requests."""

    summary: LevelSummary
    records: tuple[RequestRecord, ...]


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: object, path: Path) -> Path:
    fig.tight_layout()  # type: ignore[attr-defined]
    fig.savefig(path, dpi=80)  # type: ignore[attr-defined]
    _pyplot().close(fig)
    return path


def first_audio_cdf(series: Mapping[str, Sequence[Level]], path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for voice, levels in series.items():
        for level in levels:
            values = np.sort([r.first_audio_s * 1000 for r in level.records if r.ok and r.first_audio_s is not None])
            if len(values):
                ax.step(values, np.arange(1, len(values) + 1) / len(values), where="post",
                        label=f"{voice} {level.summary.label}")  # fmt: skip
    ax.set_xlabel("first audio (ms)")
    ax.set_ylabel("share of requests")
    ax.set_title("First audio, cumulative")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path)


def _by_concurrency(
    series: Mapping[str, Sequence[Level]], path: Path, title: str, ylabel: str, lines: dict[str, str]
) -> Path:
    """One panel; for each voice and each ``lines`` entry (label → summary attribute path), a line."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for voice, levels in series.items():
        xs = [level.summary.concurrency for level in levels]
        for name, attribute in lines.items():
            ys = [_get(level.summary, attribute) for level in levels]
            ax.plot(xs, [np.nan if y is None else y for y in ys], marker="o", label=f"{voice} {name}".strip())
    ax.set_xlabel("concurrent listeners")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _get(summary: LevelSummary, attribute: str) -> float | None:
    value: object = summary
    for part in attribute.split("."):
        value = getattr(value, part)
    if value is None:
        return None
    assert isinstance(value, (int, float))
    return float(value) * (1000 if attribute.startswith("first_audio_s") else 1)


def soak_resources(result: SoakResult, path: Path) -> Path:
    plt = _pyplot()
    names = {"rss_bytes": ("RSS (MiB)", 1 / 2**20), "open_fds": ("open fds", 1.0), "threads": ("threads", 1.0)}
    fig, axes = plt.subplots(1, len(names), figsize=(10, 3.2))
    for ax, (name, (label, scale)) in zip(axes, names.items(), strict=True):
        points = [(s.at_s / 60, s.values[name] * scale) for s in result.scrapes if name in s.values]
        if points:
            ax.plot(*zip(*points, strict=True), marker=".")
        ax.axvline(result.warmup_s / 60, color="grey", linestyle="--", linewidth=1)
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_xlabel("minutes")
        ax.set_title(label)
        ax.grid(alpha=0.3)
    return _save(fig, path)


def draw_all(series: Mapping[str, Sequence[Level]], folder: Path) -> list[Path]:
    """The four load plots into ``folder``; returns their paths."""
    p = "first_audio_s"
    return [
        first_audio_cdf(series, folder / "first_audio_cdf.png"),
        _by_concurrency(series, folder / "first_audio_vs_concurrency.png", "First audio against load",
                        "first audio (ms)", {"P50": f"{p}.p50", "P90": f"{p}.p90", "P99": f"{p}.p99"}),
        _by_concurrency(series, folder / "stall_rate_vs_concurrency.png", "Streams that underran",
                        "share of requests with an underrun", {"": "stall_rate"}),
        _by_concurrency(series, folder / "throughput.png", "Throughput",
                        "audio seconds per wall second", {"": "throughput"}),
    ]  # fmt: skip
