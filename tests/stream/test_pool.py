"""WorkerPool: runs work off the event loop, earliest deadline first, errors and cancellation."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from voxserve.stream.pool import WorkerPool


async def test_runs_off_the_event_loop_and_returns_results() -> None:
    pool = WorkerPool(1)
    try:
        main = threading.get_ident()
        ident = await pool.run(threading.get_ident)
        assert ident != main
        assert await pool.run(lambda: 6 * 7) == 42
    finally:
        pool.close()


async def test_exceptions_reach_the_caller() -> None:
    pool = WorkerPool(1)
    try:
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 / 0)
        assert await pool.run(lambda: "still serving") == "still serving"
    finally:
        pool.close()


async def test_earliest_deadline_runs_first() -> None:
    pool = WorkerPool(1)
    order: list[str] = []
    gate = threading.Event()
    try:
        blocker = asyncio.ensure_future(pool.run(gate.wait))
        await asyncio.sleep(0.05)  # the single worker is now busy
        now = time.monotonic()
        late = asyncio.ensure_future(pool.run(lambda: order.append("later chunk of a long stream"), deadline=now + 5))
        early = asyncio.ensure_future(pool.run(lambda: order.append("first chunk of a new request"), deadline=now))
        await asyncio.sleep(0.05)
        assert pool.queue_depth == 2
        gate.set()
        await asyncio.gather(blocker, late, early)
        assert order == ["first chunk of a new request", "later chunk of a long stream"]
    finally:
        pool.close()


async def test_cancelled_jobs_are_skipped() -> None:
    pool = WorkerPool(1)
    ran: list[int] = []
    gate = threading.Event()
    try:
        blocker = asyncio.ensure_future(pool.run(gate.wait))
        await asyncio.sleep(0.05)
        doomed = asyncio.ensure_future(pool.run(lambda: ran.append(1)))
        await asyncio.sleep(0.01)
        doomed.cancel()
        gate.set()
        await blocker
        await pool.run(lambda: None)
        assert ran == []
    finally:
        pool.close()


def test_a_job_outliving_its_event_loop_does_not_kill_the_worker() -> None:
    pool = WorkerPool(1)
    gate = threading.Event()
    try:

        async def submit_and_leave() -> None:
            job = asyncio.ensure_future(pool.run(gate.wait))
            await asyncio.sleep(0.05)  # the job is running; this loop closes when we return
            job.cancel()

        asyncio.run(submit_and_leave())
        gate.set()  # the job finishes after its loop is closed

        async def still_served() -> str:
            return await asyncio.wait_for(pool.run(lambda: "ok"), timeout=5)

        assert asyncio.run(still_served()) == "ok"
    finally:
        pool.close()


def test_load_counts_streams_per_worker() -> None:
    pool = WorkerPool(workers=2)
    try:
        assert pool.load == 1.0
        with pool.streaming():
            assert pool.load == 1.0  # one stream on two workers: nobody shares
            with pool.streaming(), pool.streaming(), pool.streaming():
                assert pool.load == 2.0
        assert pool.load == 1.0
    finally:
        pool.close()
