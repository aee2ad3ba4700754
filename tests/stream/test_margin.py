"""The playing margin: a first audio's time on a core plus a playing job's overrun, learned from the jobs."""

from __future__ import annotations

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


def test_a_playing_jobs_lateness_counts_the_wait_for_its_result_to_reach_the_stream() -> None:
    meter = MarginMeter()
    meter.ran(0.1, 0.1, first=True)
    meter.ran(0.08, 0.1, first=False, landed_s=0.05)  # done early, but its audio arrived 0.03 s late
    assert meter.margin_s == pytest.approx(0.1 + 0.03)


def test_the_pool_exports_its_margin() -> None:
    pool = WorkerPool(1)
    try:
        pool.margin.expect(0.5)  # what a session tells it before it submits a first job
        assert pool.stats().playing_margin_s == 0.5
        pool.margin.ran(0.05, 0.5, first=True)  # what a session reports of its first job
        assert pool.stats().playing_margin_s == 0.05
    finally:
        pool.close()


def test_clearing_forgets_every_sample_and_the_stand_in() -> None:
    meter = MarginMeter()
    meter.expect(0.7)
    meter.ran(1.4, 0.7, first=True)
    meter.ran(0.5, 0.2, first=False)
    assert meter.samples == (1, 1) and meter.margin_s > 0
    meter.clear()
    assert meter.samples == (0, 0) and meter.margin_s == 0.0
    meter.expect(0.3)  # the stand-in starts again from what is submitted next
    assert meter.margin_s == pytest.approx(0.3)
