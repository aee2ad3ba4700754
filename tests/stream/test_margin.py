"""The playing margin: a first audio's time on a core plus a playing job's overrun, learned from the jobs."""

from __future__ import annotations

import time

import pytest

from voxserve.stream.margin import KEPT, MarginMeter
from voxserve.stream.pool import WorkerPool


def test_the_expected_cost_of_first_jobs_stands_in_until_one_is_measured() -> None:
    meter = MarginMeter()
    assert meter.margin_s == 0.0
    meter.expect(0.2)
    meter.expect(0.1)
    assert meter.margin_s == 0.2  # the largest first job expected so far
    meter.ran(0.05, 0.2, first=True)
    assert meter.margin_s == 0.05 and meter.samples == (1, 0)  # measured: the expectation no longer counts
    meter.expect(0.4)
    assert meter.margin_s == 0.05


def test_the_margin_adds_high_quantiles_of_first_jobs_and_of_overruns() -> None:
    meter = MarginMeter()
    for ms in range(1, 21):
        meter.ran(ms / 1000, 0.0, first=True)
    assert meter.margin_s == pytest.approx(0.019)  # all but the slowest tenth
    for ms in range(1, 21):  # playing jobs expected at 0.1 s that ran 0.1 s + 1..20 ms
        meter.ran(0.1 + ms / 1000, 0.1, first=False)
    meter.ran(0.05, 0.1, first=False)  # early: no overrun
    assert meter.margin_s == pytest.approx(0.019 + 0.018)  # 21 overruns now, the lowest 0
    meter.ran(0.3, 0.0, first=False)  # nothing expected of it: no sample of overrun
    assert meter.samples == (20, 21)
    for _ in range(KEPT):  # a calmer load: the slow jobs age out
        meter.ran(0.005, 0.0, first=True)
        meter.ran(0.1, 0.1, first=False)
    assert meter.margin_s == pytest.approx(0.005)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def _fail() -> None:
    raise ValueError("no audio")


async def test_the_pool_learns_its_margin_from_the_jobs_it_runs() -> None:
    """A first job's wall time and a playing job's wall time beyond its cost are the samples; a job that
    failed teaches nothing. The margin is what the pool's stats export."""
    pool = WorkerPool(1)
    try:
        with pool.streaming(time.monotonic) as stream:
            first = pool.run(lambda: _sleep(0.05), cost=0.5, playing=False, stream=stream)
            await first
            assert 0.05 <= pool.margin.margin_s < 0.15, pool.margin.margin_s
            await pool.run(lambda: _sleep(0.15), deadline=time.monotonic() + 1, cost=0.05, stream=stream)
            assert 0.15 <= pool.margin.margin_s < 0.35, pool.margin.margin_s  # 0.05 s first + 0.1 s over
            with pytest.raises(ValueError):
                await pool.run(_fail, cost=0.0, playing=False, stream=stream)
        assert pool.margin.samples == (1, 1)
        assert pool.stats().playing_margin_s == pool.margin.margin_s
    finally:
        pool.close()
