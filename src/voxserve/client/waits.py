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
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], timeout_s: float | None) -> T:
    """``awaitable``'s result, or ``TimeoutError`` once ``timeout_s`` has passed (None: no limit), when
    it is cancelled. A cancellation of the caller always propagates, and cancels ``awaitable`` too."""
    if timeout_s is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    finally:
        if not task.done():
            task.cancel()
    if not done:
        raise TimeoutError
    return task.result()
