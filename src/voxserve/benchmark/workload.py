"""Load shapes: a closed loop (N listeners, each asking again once it has played its audio, or, unpaced, as
soon as the audio has arrived) and an open loop (requests arriving as a Poisson process at a set rate,
however busy the server is).

A listener that plays (``Plan.play``) is the caller a voice agent or a screen reader has: it plays each
reply in real time from its first byte, waits out any underrun, and asks again when the reply has played.
N such listeners ask for about N seconds of audio a second: what "N listeners" means to an operator.
Unpaced listeners ask for as much audio as the server makes: N of them measure its saturation.

A closed loop's listeners join at random moments within the plan's ``ramp_s`` (seeded), as callers
do: N requests sent in the same millisecond are a herd no traffic makes, whose first audio all falls
due at once. ``ramp_s`` 0 sends them so, to measure exactly that.

Requests take the plan's texts in a shuffled order and cycle through its transports and voices, so a
run may mix them (the soak does). No request starts after ``duration_s``; those in flight finish.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sys
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field

from voxserve.benchmark.records import Arrivals, RequestRecord, record_from_arrivals
from voxserve.benchmark.stats import percentile
from voxserve.benchmark.transports import Clients, Job, speak

FAILED_PAUSE_S = 1.0


@dataclass(frozen=True)
class Plan:
    transports: tuple[str, ...]
    voices: tuple[str, ...]
    texts: tuple[str, ...]
    duration_s: float
    tokens_per_s: float | None = None
    seed: int = 0
    ramp_s: float = 0.0  # a closed loop's listeners join within this many seconds of its start
    play: bool = False  # a closed loop's listeners play each reply before asking again (else: unpaced)


def join_times(listeners: int, ramp_s: float, rng: random.Random) -> list[float]:
    """When each of a closed loop's ``listeners`` sends its first request: uniformly at random in
    ``[0, ramp_s)``, in order (all at 0 when ``ramp_s`` is 0)."""
    if ramp_s < 0:
        raise ValueError("ramp must not be negative")
    return sorted(rng.uniform(0.0, ramp_s) if ramp_s else 0.0 for _ in range(listeners))


def poisson_arrivals(rate: float, duration_s: float, rng: random.Random) -> list[float]:
    """Arrival times in ``[0, duration_s)`` of a Poisson process with ``rate`` arrivals per second
    (exponential gaps between them)."""
    if rate <= 0:
        raise ValueError("arrival rate must be positive")
    times: list[float] = []
    t = rng.expovariate(rate)
    while t < duration_s:
        times.append(t)
        t += rng.expovariate(rate)
    return times


@dataclass
class Progress:
    """One status line on stderr: rewritten in place on a terminal, a new line every few seconds otherwise."""

    label: str
    duration_s: float
    started: float = field(default_factory=time.perf_counter)
    records: list[RequestRecord] = field(default_factory=list)
    in_flight: int = 0
    peak: int = 0
    quiet: bool = False
    shown: str = ""  # the last line printed

    def line(self) -> str:
        elapsed = time.perf_counter() - self.started
        ok = [r.first_audio_s for r in self.records if r.ok and r.first_audio_s is not None]
        first = f"{percentile(ok, 50) * 1000:.0f} ms" if ok else "-"
        failed = sum(1 for r in self.records if not r.ok)
        stalled = sum(1 for r in self.records if r.stalled)
        return (
            f"{self.label}: {min(elapsed, self.duration_s):5.1f}/{self.duration_s:g} s  done {len(self.records)}"
            f"  failed {failed}  in flight {self.in_flight}  first audio P50 {first}  stalled {stalled}"
        )

    async def show(self) -> None:
        tty = sys.stderr.isatty()
        while not self.quiet:
            await asyncio.sleep(0.5 if tty else 5.0)
            self.shown = self.line()
            print(("\r" + self.shown) if tty else self.shown, end="" if tty else "\n", file=sys.stderr, flush=True)

    def finish(self) -> None:
        """The level's last line: on a terminal it ends the line rewritten in place; elsewhere it is printed
        unless the last periodic line said the same."""
        tty = sys.stderr.isatty()
        if not self.quiet and (tty or self.line() != self.shown):
            print(("\r" if tty else "") + self.line(), file=sys.stderr, flush=True)


class _Requests:
    """Hands out the plan's requests in order and records them."""

    def __init__(self, clients: Clients, plan: Plan, rates: dict[str, int], progress: Progress) -> None:
        self.clients, self.plan, self.rates, self.progress = clients, plan, rates, progress
        texts = list(plan.texts)
        random.Random(plan.seed).shuffle(texts)
        self._texts = itertools.cycle(texts)
        self._numbers = itertools.count()
        self.run0 = time.perf_counter()

    async def one(self, concurrency: int) -> RequestRecord:
        k = next(self._numbers)
        transport = self.plan.transports[k % len(self.plan.transports)]
        voice = self.plan.voices[(k // len(self.plan.transports)) % len(self.plan.voices)]
        text = next(self._texts)
        job = Job(text, voice, self.rates[voice], self.plan.tokens_per_s)
        started = time.perf_counter() - self.run0
        self.progress.in_flight += 1
        self.progress.peak = max(self.progress.peak, self.progress.in_flight)
        arrivals: Arrivals = []
        error = None
        try:
            arrivals = await speak(transport, self.clients, job)
            if not arrivals:
                error = "no audio"
        except Exception as exc:  # a load tool records every failure and goes on
            error = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            self.progress.in_flight -= 1
        failed_after = time.perf_counter() - self.run0 - started
        record = record_from_arrivals(
            arrivals,
            transport=transport,
            voice=voice,
            chars=len(text),
            started_s=started,
            concurrency=concurrency,
            error=error,
            failed_after_s=failed_after,
        )
        self.progress.records.append(record)
        return record


async def _with_progress(progress: Progress, work: Awaitable[object]) -> tuple[list[RequestRecord], float]:
    shower = asyncio.create_task(progress.show())
    try:
        await work
    finally:
        shower.cancel()
        await asyncio.gather(shower, return_exceptions=True)
    progress.finish()
    return progress.records, time.perf_counter() - progress.started


async def closed_loop(
    clients: Clients, plan: Plan, concurrency: int, rates: dict[str, int], progress: Progress
) -> tuple[list[RequestRecord], float]:
    """``concurrency`` listeners, joining within ``plan.ramp_s``, until ``plan.duration_s``; returns the
    records and the wall time. A listener that plays (``plan.play``) asks again when its reply has played,
    or at the run's end, whichever comes first."""
    requests = _Requests(clients, plan, rates, progress)
    deadline = requests.run0 + plan.duration_s
    joins = join_times(concurrency, plan.ramp_s, random.Random(plan.seed))

    async def listener(join_s: float) -> None:
        await asyncio.sleep(max(0.0, requests.run0 + join_s - time.perf_counter()))
        while time.perf_counter() < deadline:
            record = await requests.one(concurrency)
            if not record.ok:
                # a refused listener (503 at capacity) waits before asking again, as a client should,
                # instead of turning the loop into a storm of refusals
                await asyncio.sleep(FAILED_PAUSE_S)
            elif plan.play:
                played = requests.run0 + record.started_s + record.played_s
                await asyncio.sleep(max(0.0, min(played, deadline) - time.perf_counter()))

    work = asyncio.gather(*(listener(join_s) for join_s in joins))
    return await _with_progress(progress, work)


async def open_loop(
    clients: Clients, plan: Plan, rate: float, rates: dict[str, int], progress: Progress
) -> tuple[list[RequestRecord], float]:
    """Poisson arrivals at ``rate`` per second for ``plan.duration_s``; returns records and wall time."""
    requests = _Requests(clients, plan, rates, progress)
    schedule = poisson_arrivals(rate, plan.duration_s, random.Random(plan.seed))

    async def arrive(at: float) -> None:
        await asyncio.sleep(max(0.0, requests.run0 + at - time.perf_counter()))
        await requests.one(0)

    work = asyncio.gather(*(arrive(at) for at in schedule))
    return await _with_progress(progress, work)
