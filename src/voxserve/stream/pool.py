"""A bounded pool of synthesis worker threads with earliest-deadline-first scheduling.

Every unit of model work (a segment, or one decoder window) is submitted with a
deadline: the wall-clock time by which its audio is needed. A new request's first
unit is due now; a long stream's later units are due when playback reaches them.
So the first audio of a new caller is computed before later audio of a long
reading, and no stream that is ahead of playback starves one that is not.

With ``cores`` and ``levels`` (elastic ONNX sessions, CPU only), jobs share the cores instead of each
taking all of them: a job runs with the widest thread count in ``levels`` that fits both the cores
free now and an equal share of the cores among the streams producing audio, and waits while no core
is free. One stream alone decodes on every core; two on two cores decode side by side, one core each.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from voxserve.engines.onnx import thread_budget

T = TypeVar("T")


@dataclass(order=True)
class _Job:
    deadline: float
    seq: int
    fn: Callable[[], Any] = field(compare=False)
    loop: asyncio.AbstractEventLoop = field(compare=False)
    future: asyncio.Future[Any] = field(compare=False)


class WorkerPool:
    """``await pool.run(fn, deadline=...)`` runs ``fn()`` on a worker thread."""

    def __init__(
        self,
        workers: int = 1,
        name: str = "voxserve-worker",
        *,
        cores: int | None = None,
        levels: tuple[int, ...] = (),
    ) -> None:
        if cores is not None and (not levels or min(levels) != 1 or max(levels) > cores):
            raise ValueError(f"thread levels {levels} do not fit {cores} cores")
        self.cores = cores
        self._levels = sorted(levels, reverse=True)
        self._free = cores or 0
        self._heap: list[_Job] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._closed = False
        self._busy = 0
        self._streams = 0
        self._threads = [threading.Thread(target=self._loop, name=f"{name}-{i}", daemon=True) for i in range(workers)]
        for thread in self._threads:
            thread.start()

    @property
    def workers(self) -> int:
        return len(self._threads)

    @property
    def queue_depth(self) -> int:
        with self._cond:
            return len(self._heap)

    @property
    def busy(self) -> int:
        with self._cond:
            return self._busy

    @contextlib.contextmanager
    def streaming(self) -> Iterator[None]:
        """Count the caller as a stream producing audio while inside the block (see :attr:`load`)."""
        with self._cond:
            self._streams += 1
        try:
            yield
        finally:
            with self._cond:
                self._streams -= 1

    @property
    def load(self) -> float:
        """Streams producing audio per worker thread, at least 1: how many ways each worker is shared.

        With shared cores: streams per job that can run at once at the streams' share of the cores."""
        return self.share()[1]

    def share(self) -> tuple[int | None, float]:
        """(threads a stream's job gets now, or None without shared cores; streams per job slot, >= 1)."""
        with self._cond:
            streams = self._streams
            if self.cores is None:
                return None, max(1.0, streams / len(self._threads))
            threads = self._level(self.cores)
            return threads, max(1.0, streams / (self.cores // threads))

    def _level(self, free: int) -> int:
        """The widest thread level within ``free`` cores and the streams' equal share (lock held)."""
        assert self.cores is not None
        fair = max(1, self.cores // max(1, self._streams))
        return next(n for n in self._levels if n <= min(free, fair))

    async def run(self, fn: Callable[[], T], *, deadline: float | None = None) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        job = _Job(deadline if deadline is not None else time.monotonic(), next(self._seq), fn, loop, future)
        with self._cond:
            if self._closed:
                raise RuntimeError("worker pool is closed")
            heapq.heappush(self._heap, job)
            self._cond.notify()
        return await future

    def close(self, wait: bool = True) -> None:
        with self._cond:
            self._closed = True
            pending, self._heap = self._heap, []
            self._cond.notify_all()
        for job in pending:
            job.loop.call_soon_threadsafe(_cancel, job.future)
        if wait:
            for thread in self._threads:
                thread.join(timeout=30)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._heap or (self.cores is not None and self._free < 1)):
                    self._cond.wait()
                if self._closed and not self._heap:
                    return
                job = heapq.heappop(self._heap)
                if job.future.cancelled():  # caller went away while queued: skip the work
                    continue
                self._busy += 1
                threads = self._level(self._free) if self.cores is not None else None
                self._free -= threads or 0
            try:
                with thread_budget(threads):
                    result = job.fn()
            except BaseException as exc:  # handed to the awaiting coroutine, never lost
                _deliver(job, _set_exception, exc)
            else:
                _deliver(job, _set_result, result)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._free += threads or 0
                    self._cond.notify_all()


def _deliver(job: _Job, setter: Callable[[asyncio.Future[Any], Any], None], value: Any) -> None:
    """Hand a result to the job's event loop; if that loop is gone, nobody is waiting any more."""
    with contextlib.suppress(RuntimeError):  # the loop closed while the job ran (its caller went away)
        job.loop.call_soon_threadsafe(setter, job.future, value)


def _set_result(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _cancel(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.cancel()
