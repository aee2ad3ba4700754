"""``voxserve.waits.within``: a timed wait that ends in time and never loses its caller's cancellation."""

from __future__ import annotations

import asyncio
import gc

import pytest

from voxserve.client.waits import within


async def test_a_result_in_time_is_returned_and_a_late_one_times_out_and_is_cancelled() -> None:
    assert await within(asyncio.sleep(0, result="audio"), 1.0) == "audio"
    slow = asyncio.ensure_future(asyncio.sleep(10))
    with pytest.raises(TimeoutError):
        await within(slow, 0.01)
    await asyncio.sleep(0)
    assert slow.cancelled()  # nothing is left running behind a wait that gave up


async def test_a_cancellation_that_meets_the_result_still_cancels_the_caller() -> None:
    """The result and the caller's cancellation arrive in the same turn of the loop: ``asyncio.wait_for``
    before Python 3.12 returns the result and the cancelled caller runs on (a send that goes on after
    its stream was cancelled, a queued stream admitted after its caller left)."""
    answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    ran_on = []

    async def caller() -> None:
        await within(answer, 10.0)
        ran_on.append(True)

    task = asyncio.ensure_future(caller())
    await asyncio.sleep(0)  # the caller now waits
    answer.set_result("audio")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ran_on == []


async def test_no_limit_waits_for_the_result() -> None:
    assert await within(asyncio.sleep(0.01, result=3), None) == 3


async def test_what_a_cancelled_wait_raises_instead_is_taken_not_reported_as_lost() -> None:
    """A gRPC write cancelled by a caller that went away may end with an error of its own instead of
    stopping; it is taken, so asyncio never logs "Task exception was never retrieved"."""
    lost: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: lost.append(context))

    async def fails_when_stopped() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise OSError("the write failed as it was stopped") from None

    caller = asyncio.ensure_future(within(fails_when_stopped(), 10.0))
    await asyncio.sleep(0.01)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    with pytest.raises(TimeoutError):
        await within(fails_when_stopped(), 0.01)
    await asyncio.sleep(0.01)
    gc.collect()  # a lost exception is reported when its task is freed
    await asyncio.sleep(0)
    assert lost == []
