"""``voxserve bench --soak MINUTES``: a long mixed load while the server's resources are watched.

Listeners cycle through every transport and voice given; ``/metrics`` is read every few seconds. What
the server holds after a warm-up (its caches, pools and buffers filled) should stay flat; the report
gives each figure's value at the start, after warm-up, at the end, the growth between the last two, and
a least-squares slope. Beside the listeners, one client keeps provoking faults (cancels, abrupt
disconnects, invalid requests on every transport: :mod:`mischief`); the report counts those answered
as the protocol says, the unexpected ones, and the requests the server counted as its own failures.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass

import numpy as np

from voxserve.benchmark.mischief import MischiefTally, mischief
from voxserve.benchmark.records import RequestRecord
from voxserve.benchmark.scrape import PROCESS, Scrape, scrape, server_failures
from voxserve.benchmark.transports import Clients
from voxserve.benchmark.workload import Plan, Progress, closed_loop


@dataclass(frozen=True)
class Growth:
    name: str
    start: float
    after_warmup: float
    end: float
    growth: float
    slope_per_min: float


def warmup_s(duration_s: float) -> float:
    """The part of a soak not judged: a quarter of it, at most a minute."""
    return min(60.0, duration_s / 4)


def growth(scrapes: list[Scrape], warmup: float) -> list[Growth]:
    """Each process figure's growth over the scrapes taken after ``warmup`` seconds (``start``: its
    first value of all)."""
    judged = [s for s in scrapes if s.at_s >= warmup]
    rows = []
    for name in PROCESS.values():
        points = [(s.at_s, s.values[name]) for s in judged if name in s.values]
        if len(points) < 2:
            continue
        first = next(s.values[name] for s in scrapes if name in s.values)
        times = np.array([p[0] for p in points]) / 60
        values = np.array([p[1] for p in points])
        slope = float(np.polyfit(times, values, 1)[0])
        rows.append(Growth(name, first, values[0], values[-1], values[-1] - values[0], slope))
    return rows


@dataclass(frozen=True)
class SoakResult:
    records: list[RequestRecord]
    wall_s: float
    scrapes: list[Scrape]
    growth: list[Growth]
    warmup_s: float
    mischief: MischiefTally
    server_failures: dict[str, float]

    def to_json(self) -> dict[str, object]:
        return {
            "wall_s": self.wall_s,
            "warmup_s": self.warmup_s,
            "scrapes": [asdict(s) for s in self.scrapes],
            "growth": [asdict(g) for g in self.growth],
            "mischief": self.mischief.to_json(),
            "server_failures": self.server_failures,
        }


async def soak(
    clients: Clients, plan: Plan, concurrency: int, rates: dict[str, int], quiet: bool = False
) -> SoakResult:
    """Run ``plan`` (its duration is the soak's) with ``concurrency`` listeners, sampling ``/metrics``
    every 5 s (more often in a short soak, so that its judged part has points to fit), while one more
    client provokes faults for the same time."""
    interval_s = max(0.5, min(5.0, plan.duration_s / 20))
    scrapes: list[Scrape] = []
    t0 = time.perf_counter()

    async def sample() -> None:
        while True:
            scrapes.append(await scrape(clients.http, time.perf_counter() - t0))
            await asyncio.sleep(interval_s)

    sampler = asyncio.create_task(sample())
    tally = MischiefTally()
    faults = asyncio.create_task(mischief(clients, plan.voices, plan.duration_s, tally))
    try:
        progress = Progress(f"soak c={concurrency}", plan.duration_s, quiet=quiet)
        records, wall = await closed_loop(clients, plan, concurrency, rates, progress)
        await faults
    finally:
        for task in (sampler, faults):
            task.cancel()
        await asyncio.gather(sampler, faults, return_exceptions=True)
    scrapes.append(await scrape(clients.http, time.perf_counter() - t0))
    failures = server_failures((await clients.http.get("/metrics")).text)
    warm = warmup_s(plan.duration_s)
    return SoakResult(records, wall, scrapes, growth(scrapes, warm), warm, tally, failures)
