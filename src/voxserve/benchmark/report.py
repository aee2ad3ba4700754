"""Text tables for the terminal and the raw-results JSON."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from voxserve.benchmark.capacity import CapacityResult
from voxserve.benchmark.mischief import refused_busy
from voxserve.benchmark.records import RequestRecord
from voxserve.benchmark.soak import SoakResult
from voxserve.benchmark.stats import LevelSummary, Spread


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _spread_ms(spread: Spread) -> str:
    return f"{_ms(spread.p50):>6} {_ms(spread.p90):>6} {_ms(spread.p99):>6}"


def level_table(voice: str, levels: Sequence[LevelSummary], saturation: LevelSummary | None = None) -> str:
    """One row per level: failed requests and their P90 time to fail (ms), first and last audio P50/P90/P99
    (ms), RTF P50/P90, stall rate, throughput.

    With a ``saturation`` level (unpaced listeners, measured in the same run), it comes first, and each
    level's throughput is also shown as a share of its throughput ("of sat")."""
    head = (
        f"{voice}\n{'level':>10} {'reqs':>5} {'fail':>4} {'in ms':>5} | {'first audio ms P50/P90/P99':^20} | "
        f"{'last audio ms P50/P90/P99':^20} | {'RTF P50/P90':^11} | {'stalled':>7} {'stall s':>7} | {'audio/s':>7}"
    )
    rows = [head + (f" {'of sat':>6}" if saturation else "")]
    for s in ([saturation] if saturation else []) + list(levels):
        rtf = "-" if s.rtf.p50 is None else f"{s.rtf.p50:.2f}/{(s.rtf.p90 or 0):.2f}"
        share = f" {s.throughput / saturation.throughput:>6.0%}" if saturation and saturation.throughput else ""
        rows.append(
            f"{s.label:>10} {s.requests:>5} {s.errors:>4} {_ms(s.failed_after_s.p90):>5} | "
            f"{_spread_ms(s.first_audio_s)} | {_spread_ms(s.last_audio_s)} | {rtf:>11} | "
            f"{s.stall_rate:>7.1%} {s.underrun_s_total:>7.2f} | "
            f"{s.throughput:>7.2f}{share}"
        )
    return "\n".join(rows)


def capacity_line(voice: str, result: CapacityResult, saturation: LevelSummary | None = None) -> str:
    """The search's answer, each level's verdict, and with a ``saturation`` level the share of it that the
    largest level that held delivered."""
    tried = ", ".join(f"{v.concurrency}: {v.reason}" for v in result.verdicts)
    held = next((s for s in reversed(result.levels) if s.concurrency == result.capacity), None)
    share = ""
    if result.capacity and held is not None and saturation is not None and saturation.throughput:
        share = f", {held.throughput / saturation.throughput:.0%} of the saturation"
    return (
        f"capacity {voice}: {result.capacity} concurrent listeners{share} (lone first audio "
        f"{_ms(result.lone_first_audio_s)} ms, limit {_ms(result.first_audio_limit_s)} ms; {tried})"
    )


def soak_table(result: SoakResult) -> str:
    rows = [f"soak: {len(result.records)} requests in {result.wall_s:.0f} s; growth after {result.warmup_s:.0f} s"]
    for g in result.growth:
        scale, unit = (1 / 2**20, "MiB") if g.name == "rss_bytes" else (1.0, "")
        rows.append(
            f"  {g.name:>10}: start {g.start * scale:.1f}, {g.after_warmup * scale:10.1f} -> {g.end * scale:10.1f} "
            f"{unit:<3} (growth {g.growth * scale:+.1f}, slope {g.slope_per_min * scale:+.2f}/min)"
        )
    if not result.growth:
        rows.append("  the server exported no process figures")
    failed = [r.error or "no audio" for r in result.records if not r.ok]
    busy = sum(1 for error in failed if refused_busy(error))
    tally = result.mischief
    rows.append(f"  listeners' requests failed: {len(failed)} ({busy} refused at capacity, {len(failed) - busy} other)")
    rows.extend(f"    {error[:200]}" for error in [e for e in failed if not refused_busy(e)][:5])
    rows.append(
        f"  provoked faults answered as expected: {sum(tally.expected.values())} {dict(tally.expected)}; "
        f"refused at capacity: {sum(tally.busy.values())}; "
        f"unexpected: {sum(tally.unexpected.values())} {dict(tally.unexpected)}"
    )
    rows.extend(f"    {example}" for example in tally.examples[:5])
    rows.append(f"  server-side failures counted by the server: {result.server_failures or 'none'}")
    return "\n".join(rows)


def failures(records: Iterable[RequestRecord]) -> str:
    """Why requests failed, the commonest reasons first ("" when none did): the table's ``fail`` column
    cannot tell a server at capacity from a rate limit or a wrong key."""
    reasons = Counter(_reason(r.error) for r in records if r.error)
    if not reasons:
        return ""
    line = "failed: " + "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(3))
    if len(reasons) > 3:
        line += f"; {sum(reasons.values()) - sum(n for _, n in reasons.most_common(3))} other"
    if any("429" in reason for reason in reasons):
        line += "\n  (rate limited: a load test from one address wants VOXSERVE_RATE_LIMIT_PER_MINUTE=0 on the server)"
    return line


def _reason(error: str) -> str:
    """An error's kind, without the exception's name and the numbers that vary between requests."""
    text = re.sub(r"^\w+(Error|Exception): ", "", error)
    text = re.split(r"[(;]", text, maxsplit=1)[0]
    return re.sub(r"\d+\.\d+", "N", text).strip()[:70]
