"""Admission control: at most ``max_streams`` synthesis streams, at most ``max_queue`` waiting.

A request beyond both limits (or any request while draining) is refused at once with
:class:`Overloaded`, never left hanging; a queued request that waits longer than
``queue_timeout_s`` is refused the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable

from voxserve.errors import Overloaded, ShuttingDown


class Admission:
    def __init__(
        self,
        max_streams: int,
        max_queue: int,
        queue_timeout_s: float = 30.0,
        on_change: Callable[[int, int], None] | None = None,
    ) -> None:
        self.max_streams = max_streams
        self.max_queue = max_queue
        self.queue_timeout_s = queue_timeout_s
        self._active = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._draining = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._on_change = on_change

    @property
    def active(self) -> int:
        return self._active

    @property
    def queued(self) -> int:
        return len(self._waiters)

    @property
    def draining(self) -> bool:
        return self._draining

    def start_draining(self) -> None:
        """Refuse new streams from now on; waiting requests are refused too."""
        self._draining = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(ShuttingDown("server is shutting down", retry_after_s=5.0))
        self._changed()

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def acquire(self) -> None:
        if self._draining:
            raise ShuttingDown("server is shutting down", retry_after_s=5.0)
        if self._active < self.max_streams and not self._waiters:
            self._take()
            return
        if len(self._waiters) >= self.max_queue:
            raise Overloaded(
                f"server at capacity ({self._active} streams, {len(self._waiters)} queued); retry shortly",
                retry_after_s=1.0,
            )
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._changed()
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.queue_timeout_s)
        except BaseException as exc:
            if waiter in self._waiters:
                self._waiters.remove(waiter)
                self._changed()
            elif waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.release()  # a slot was handed over just as we gave up: pass it on
            if isinstance(exc, asyncio.TimeoutError):
                raise Overloaded("timed out waiting for a free stream; retry shortly", retry_after_s=1.0) from None
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # hand the slot over directly; _active is unchanged
                self._changed()
                return
        self._active -= 1
        if self._active == 0:
            self._idle.set()
        self._changed()

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    def _take(self) -> None:
        self._active += 1
        self._idle.clear()
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self._active, len(self._waiters))
