"""bench/decision_cost.py builds a pool shaped like the server's and times each decision on it: the pool
it builds must be one the decisions act on (streams thin and not, newcomers held back, a job ready), or
the times it prints would be of early returns."""

from __future__ import annotations

import time

from bench import decision_cost


def test_the_pool_it_times_has_thin_streams_newcomers_and_a_job_to_start() -> None:
    sharing, streams, _ = decision_cost.build(12, 3, mixed=True, cores=2)
    with sharing._cond:
        thin = sharing._thin()
        job, _ = sharing._ready()
        held = sharing._held(time.monotonic())
    assert 0 < len(thin) < len(streams) - 3  # some of the playing streams, none of the newcomers
    assert len(held) == 3, "the newcomers' first audios wait for the thin streams"
    assert job is not None and not job.first  # so a playing stream's job starts
    assert {s.needs() for s in streams} == {streams[0].needs(), streams[1].needs()}  # two engines


def test_every_decision_is_timed() -> None:
    times = decision_cost.measure(6, 1, mixed=False, cores=2, batches=1, calls=2)
    assert set(times) == set(decision_cost.DECISIONS)
    assert all(t > 0 for t in times.values())
