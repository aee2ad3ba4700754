"""A timed wait that never swallows its caller's cancellation: the one every bounded wait uses.

``asyncio.wait_for`` before Python 3.12 returns the result when a cancellation of its caller meets the
awaited result in the same turn of the loop: the cancellation is lost and the caller runs on as if it
had never been cancelled. A client stream closed on barge-in then waits for ever, and on the server a
send that completes just as its stream is cancelled (the caller left) goes on sending, or a stream
admitted from the queue just as its caller left holds its booking. ``asyncio.timeout`` gets this right,
but only from Python 3.11, and the client supports 3.10.

It lives in the client because the client imports nothing else of the package (it is used without the
server); the server's bounded waits use it from here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout_s: float | None) -> T:
    """``awaitable``'s result, or ``TimeoutError`` once ``timeout_s`` has passed (None: no limit), when
    it is cancelled and its cancellation has run. A cancellation of the caller always propagates, and
    cancels ``awaitable`` too. What the cancelled awaitable raises instead (a gRPC write fails rather
    than stops) is taken and dropped: it would only be logged as never retrieved."""
    if timeout_s is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
        if not done:
            task.cancel()
            await asyncio.wait({task})
    except BaseException:
        task.cancel()
        task.add_done_callback(_retrieve)
        raise
    if not done:
        _retrieve(task)
        raise TimeoutError
    return task.result()


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Take ``task``'s exception, if it ended with one, so that asyncio does not report it as lost."""
    if not task.cancelled():
        task.exception()
