"""The capacity search: the most concurrent listeners a server serves before they notice.

A level holds while its P90 first audio stays within ``first_audio_ratio`` times the lone first audio
(the P50 at concurrency 1), and at most ``max_stall_rate`` of its requests underran or failed. The
search doubles the concurrency until a level fails, then bisects between the last level that held and
the first that failed. Measurements are noisy, so the answer is the largest level seen to hold
below the first failure, not a guarantee.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from voxserve.benchmark.stats import LevelSummary


@dataclass(frozen=True)
class CapacityTarget:
    first_audio_ratio: float = 3.0
    max_stall_rate: float = 0.01
    max_concurrency: int = 256


@dataclass(frozen=True)
class Verdict:
    concurrency: int
    held: bool
    reason: str


@dataclass(frozen=True)
class CapacityResult:
    """``capacity`` is 0 when even one lone listener was not served within the target."""

    capacity: int
    lone_first_audio_s: float | None
    first_audio_limit_s: float | None
    verdicts: tuple[Verdict, ...]
    levels: tuple[LevelSummary, ...]


def judge(level: LevelSummary, limit_s: float, target: CapacityTarget) -> Verdict:
    """Whether ``level`` held against a first-audio limit and the target's stall rate."""
    n = level.concurrency
    if level.requests == 0 or level.first_audio_s.p90 is None:
        return Verdict(n, False, "no request completed")
    failed = level.errors / level.requests
    if failed > target.max_stall_rate:
        return Verdict(n, False, f"{failed:.1%} of requests failed")
    if level.stall_rate > target.max_stall_rate:
        return Verdict(n, False, f"stall rate {level.stall_rate:.1%} > {target.max_stall_rate:.1%}")
    if level.first_audio_s.p90 > limit_s:
        return Verdict(n, False, f"P90 first audio {level.first_audio_s.p90 * 1000:.0f} ms > {limit_s * 1000:.0f} ms")
    return Verdict(n, True, "held")


async def find_capacity(
    measure: Callable[[int], Awaitable[LevelSummary]], target: CapacityTarget | None = None
) -> CapacityResult:
    """Measure levels chosen by the search (``measure(concurrency)``) and return the largest that held."""
    target = target or CapacityTarget()
    levels: list[LevelSummary] = []
    verdicts: list[Verdict] = []

    async def run(n: int, limit_s: float) -> bool:
        level = await measure(n)
        levels.append(level)
        verdicts.append(judge(level, limit_s, target))
        return verdicts[-1].held

    lone = await measure(1)
    levels.append(lone)
    lone_s = lone.first_audio_s.p50
    if lone_s is None:
        verdicts.append(Verdict(1, False, "no request completed"))
        return CapacityResult(0, None, None, tuple(verdicts), tuple(levels))
    limit_s = lone_s * target.first_audio_ratio
    verdicts.append(judge(lone, limit_s, target))
    if not verdicts[-1].held:
        return CapacityResult(0, lone_s, limit_s, tuple(verdicts), tuple(levels))
    held, failed = 1, None
    while failed is None and held < target.max_concurrency:
        n = min(held * 2, target.max_concurrency)
        if await run(n, limit_s):
            held = n
        else:
            failed = n
    while failed is not None and failed - held > 1:
        middle = (held + failed) // 2
        if await run(middle, limit_s):
            held = middle
        else:
            failed = middle
    return CapacityResult(held, lone_s, limit_s, tuple(verdicts), tuple(levels))
