"""A bounded pool of synthesis worker threads: one deadline rule for all model work.

Every unit of model work (a segment's text, or one decoder window) is submitted with a deadline, the
moment its listener would run out of audio (a new stream's first audio is due at once), and the work
it is expected to cost, learned on this machine (:class:`voxserve.engines.windowing.WindowCost`).
Jobs run in order of their latest start, ``deadline - cost``: the job with the least time to spare
first; a first audio's latest start is its arrival (it cannot start sooner). So a new caller's first
audio comes before later audio of a stream that is ahead, and a stream close to running dry comes
before both: a stream already playing does not run dry for one that arrived after it.

With ``cores`` and ``levels`` (elastic ONNX sessions, CPU only), jobs share the cores instead of each
taking all of them: a job runs with the widest thread count in ``levels`` that fits both the cores
free now and an equal share of the cores among the streams producing audio, and waits while no core
is free. One stream alone decodes on every core; two on two cores decode side by side, one core each.

A job whose result is already due when it is started (a first audio, or a listener about to run dry)
takes its equal share of the cores with the other such jobs, within the free ones, at the thread level
nearest that share. Streams tell the pool their deadline (:meth:`WorkerPool.streaming`), so one that
is due counts among them between its jobs too: two streams short of audio decode side by side rather
than taking turns on every core. A job that can still wait leaves the last free cores to streams
between two jobs that need audio before it would be done, and :meth:`WorkerPool.hold_limit` tells a
stream sizing its next window how long it may hold cores before another stream needs one.

A job that would be late by waiting for a core may stop running jobs that can afford it: those whose
deadline still leaves room for the late job's work and their own again. The pool stops such a job's
model call in flight and the call is made again once the job is readmitted
(:mod:`voxserve.engines.preemption`). So a caller who arrives while another stream plays does not wait
for that stream's decoder window, and no stream is stopped for another if that would make its own
listener run dry.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from voxserve.engines.onnx import set_thread_budget, thread_budget
from voxserve.engines.preemption import preemptible
from voxserve.stream.jobs import ActiveStream, Hold, Job, cancel, deliver, set_exception, set_result
from voxserve.types import SchedulerStats

T = TypeVar("T")
log = logging.getLogger(__name__)


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
        self._heap: list[Job] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._closed = False
        self._busy = 0
        self._streams: list[ActiveStream] = []
        self._running: list[Hold] = []
        self._waiting: list[tuple[float, int, Hold]] = []  # stopped jobs waiting for cores, by latest start
        self._asked = 0  # running jobs asked to give their cores back, not yet done so
        self.preemptions = 0  # model calls stopped for a job that was running late (for tests and metrics)
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

    def stats(self) -> SchedulerStats:
        """Jobs running now, jobs waiting (queued, or stopped for a late one), and calls stopped."""
        with self._cond:
            return SchedulerStats(len(self._running), len(self._heap) + len(self._waiting), self.preemptions)

    @contextlib.contextmanager
    def streaming(self, deadline: Callable[[], float] | None = None) -> Iterator[ActiveStream]:
        """Count the caller as a stream producing audio while inside the block (see :attr:`load`).

        ``deadline`` tells when the stream's listener next needs audio (read under the pool's lock, so
        it must be quick): a stream past it counts among the overdue ones that share the cores even
        between its jobs, while its last audio is delivered and its next job not yet submitted."""
        entry = ActiveStream(deadline)
        with self._cond:
            self._streams.append(entry)
        try:
            yield entry
        finally:
            with self._cond:
                self._streams.remove(entry)
                self._cond.notify_all()  # a job that left a core to it may take it now

    @property
    def streams(self) -> int:
        """Streams producing audio now (inside :meth:`streaming`)."""
        with self._cond:
            return len(self._streams)

    @property
    def load(self) -> float:
        """Streams producing audio per worker thread, at least 1: how many ways each worker is shared.

        With shared cores: streams per job that can run at once at the streams' share of the cores."""
        return self.share()[1]

    def share(self) -> tuple[int | None, float]:
        """(threads a stream's job gets now, or None without shared cores; streams per job slot, >= 1)."""
        with self._cond:
            streams = len(self._streams)
            if self.cores is None:
                return None, max(1.0, streams / len(self._threads))
            threads = self._level(self.cores)
            return threads, max(1.0, streams / (self.cores // threads))

    def hold_limit(self, stream: ActiveStream | None, threads: int) -> float:
        """Seconds from now that a job of ``stream`` may hold ``threads`` cores without another stream
        waiting for a core past its latest start (``inf``: nothing bounds it).

        A job holds its cores until it is done, so a stream far ahead of its listener that decodes a
        long window can leave one that is close to running dry without a core. The other streams that
        hold no core need one by their latest start: a queued job's, or, between two jobs, the
        stream's deadline. Taken tightest first, the i-th of them needs ``i * threads`` cores free by
        then, counting the running jobs expected to be done by that moment; the job must be done by
        the first moment that would otherwise fall short."""
        if self.cores is None:
            return math.inf
        with self._cond:
            now = time.monotonic()

            def others(job: Job) -> bool:
                return stream is None or job.stream is not stream

            running = [h for h in self._running if others(h.job)]
            waiting = [j for j in self._heap if others(j)] + [h.job for _, _, h in self._waiting if others(h.job)]
            needs = [j.start_by for j in waiting]
            needs += [s.deadline() for s in self._between(stream) if s.deadline is not None]
            ends = [(h.started + h.job.cost, h.threads or 0) for h in running]
            for i, need in enumerate(sorted(needs), 1):
                free = self.cores - sum(n for end, n in ends if end > need)
                if free - threads < i * threads:
                    return need - now
            return math.inf

    def _level(self, free: int) -> int:
        """The widest thread level within ``free`` cores and the streams' equal share (lock held)."""
        assert self.cores is not None
        fair = max(1, self.cores // max(1, len(self._streams)))
        return next(n for n in self._levels if n <= min(free, fair))

    async def run(
        self,
        fn: Callable[[], T],
        *,
        deadline: float | None = None,
        cost: float = 0.0,
        playing: bool = True,
        stream: ActiveStream | None = None,
    ) -> T:
        """Run ``fn()`` on a worker when its turn comes: least time to spare first.

        ``deadline`` (default: now) is when the result is needed and ``cost`` the expected seconds of
        work. A ``playing`` stream's listener runs dry at the deadline, so the job must start ``cost``
        before it; a new stream's first audio (not ``playing``) is due on arrival and can only start
        then, so it never overtakes a playing stream whose listener needs audio sooner. A job that
        would start late may stop running jobs that can afford it (see the module docstring).
        ``stream`` names the stream the job makes audio for (see :meth:`hold_limit`)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        due = deadline if deadline is not None else time.monotonic()
        cost = max(cost, 0.0)
        job = Job(due - cost if playing else due, next(self._seq), fn, loop, future, due, cost, stream)
        with self._cond:
            if self._closed:
                raise RuntimeError("worker pool is closed")
            heapq.heappush(self._heap, job)
            self._preempt_for(job)
            self._cond.notify_all()
        return await future

    def _preempt_for(self, job: Job) -> None:
        """Stop running jobs so that ``job`` can start before its latest start, if it would otherwise
        wait past it: those with the most time to spare first, and only those that can still be done
        in time after ``job`` and their own work again (lock held)."""
        if self.cores is None or self._busy >= len(self._threads):
            return  # no shared cores to hand over, or no idle worker could run it anyway
        now = time.monotonic()
        ahead = [j for j in self._heap if j is not job and (j.start_by, j.seq) < (job.start_by, job.seq)]
        want = self._overdue_level(self.cores, self._overdue(now)) if job.overdue(now) else 1
        coming = self._free + sum(h.threads or 0 for h in self._running if h.asked) - len(ahead)
        if coming >= want:
            return
        if coming >= 1 and not job.late(now):
            return  # a core is free for it now; more would only be nice
        soonest = min((self._remaining(h, now) for h in self._running), default=0.0)
        if not job.late(now + soonest):
            return  # a running job will be done before its latest start
        for hold in sorted(self._running, key=lambda h: self._spare(h, now), reverse=True):
            spare = self._spare(hold, now)
            if coming >= want or spare <= 0 or spare < job.cost:
                break
            if hold.asked:
                continue
            hold.asked = True
            self._asked += 1
            coming += hold.threads or 0
            if hold.armed is not None:
                hold.armed.terminate = True

    @staticmethod
    def _remaining(hold: Hold, now: float) -> float:
        """Expected seconds until a running job is done."""
        return max(0.0, hold.job.cost - (now - hold.started))

    @staticmethod
    def _spare(hold: Hold, now: float) -> float:
        """Seconds a running job could give away and still be done in time, doing its work again."""
        if hold.late or hold.job.cost <= 0:
            return 0.0  # late itself, or nothing known of its work: never stopped
        return hold.job.due - now - hold.job.cost

    def _resume(self, hold: Hold) -> None:
        """A stopped job gives its cores back and waits to be readmitted, ahead of later deadlines."""
        with self._cond:
            if hold.asked:
                hold.asked = False
                self._asked -= 1
            self._free += hold.threads or 0
            self._running.remove(hold)
            self.preemptions += 1
            log.debug("stopped a job due in %.2f s for a stream's first audio", hold.job.due - time.monotonic())
            entry = (hold.job.start_by, hold.job.seq, hold)
            heapq.heappush(self._waiting, entry)
            self._cond.notify_all()
            while not self._closed:
                wake = None
                if (
                    self._free >= 1
                    and self._waiting[0] is entry
                    and (not self._heap or (self._heap[0].start_by, self._heap[0].seq) > entry[:2])
                ):
                    wake = self._yields(hold.job, time.monotonic())
                    if wake is None:
                        break
                self._cond.wait(None if wake is None else max(0.0, wake - time.monotonic()))
            self._waiting.remove(entry)
            heapq.heapify(self._waiting)
            hold.threads = self._level(self._free) if self._free >= 1 else 1
            self._free -= hold.threads
            hold.started = time.monotonic()
            self._running.append(hold)
        set_thread_budget(hold.threads)

    def _ready(self) -> tuple[bool, float | None]:
        """Whether a worker may start the first queued job now, and if not, when to look again (``None``:
        when the pool changes) (lock held).

        A job that can still wait (before its latest start) leaves the last free cores to the streams
        between two jobs that need audio before it would be done (:meth:`_yields`): such a stream
        submits its next job a moment after its last one ended, and taking the core it freed would
        leave it none."""
        if not self._heap:
            return False, None
        if self.cores is None:
            return True, None
        top = self._heap[0]
        if self._free < 1 or (self._waiting and self._waiting[0][:2] < (top.start_by, top.seq)):
            return False, None
        now = time.monotonic()
        if top.overdue(now) and self._asked:
            return False, None  # cores are being freed: take them at once
        wake = self._yields(top, now)
        return wake is None, wake

    def _yields(self, job: Job, now: float) -> float | None:
        """When ``job`` may take a core after all (its latest start), if it should leave the free cores
        to streams between two jobs that need audio before it would be done; else None (lock held)."""
        if job.start_by <= now or self._free > len(self._streams):
            return None  # it must start now, or there is a core for every stream anyway
        short = sum(s.deadline() < now + job.cost for s in self._between() if s.deadline is not None)
        return job.start_by if self._free - 1 < short else None

    def _between(self, exclude: ActiveStream | None = None) -> list[ActiveStream]:
        """Streams between two jobs: none of theirs queued, running or stopped (lock held)."""
        busy = {h.job.stream for h in self._running} | {j.stream for j in self._heap}
        busy |= {h.job.stream for _, _, h in self._waiting}
        return [s for s in self._streams if s is not exclude and s not in busy]

    def _overdue(self, now: float, starting: int = 0) -> int:
        """Jobs whose result is already needed, ``starting`` ones included: queued, running, or to come
        from streams past their deadline between two jobs, whichever count is larger (lock held)."""
        jobs = sum(h.job.overdue(h.started) for h in self._running) + sum(j.overdue(now) for j in self._heap)
        streams = sum(s.deadline is not None and s.deadline() <= now for s in self._streams)
        return max(jobs + starting, streams)

    def _overdue_level(self, free: int, overdue: int) -> int:
        """An overdue job's threads: its equal share of the cores with the other overdue jobs, within the
        free ones, at the thread level nearest to that share (by ratio). Rounding down would leave cores
        idle while the job is late: with levels (16, 4, 1), five overdue jobs share three cores each,
        and one thread would make the job three times slower than four."""
        assert self.cores is not None
        share = max(1, self.cores // max(1, overdue))
        fitting = [n for n in self._levels if n <= free] or [1]
        return min(fitting, key=lambda n: (abs(math.log(n / share)), n))

    def _threads_for(self, job: Job, overdue: bool) -> int | None:
        if self.cores is None:
            return None
        if overdue:
            return self._overdue_level(self._free, self._overdue(time.monotonic(), starting=1))
        return self._level(self._free)

    def close(self, wait: bool = True) -> None:
        with self._cond:
            self._closed = True
            pending, self._heap = self._heap, []
            self._cond.notify_all()
        for job in pending:
            job.loop.call_soon_threadsafe(cancel, job.future)
        if wait:
            for thread in self._threads:
                thread.join(timeout=30)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed:
                    ready, wake = self._ready()
                    if ready:
                        break
                    self._cond.wait(None if wake is None else max(0.0, wake - time.monotonic()))
                if self._closed and not self._heap:
                    return
                job = heapq.heappop(self._heap)
                if job.future.cancelled():  # caller went away while queued: skip the work
                    continue
                self._busy += 1
                now = time.monotonic()
                threads = self._threads_for(job, job.overdue(now))
                self._free -= threads or 0
                hold = Hold(self._cond, self._resume, job, threads, job.late(now))
                self._running.append(hold)
            setter: Callable[[asyncio.Future[Any], Any], None]
            try:
                with thread_budget(threads), preemptible(hold if self.cores is not None else None):
                    setter, value = set_result, job.fn()
            except BaseException as exc:  # handed to the awaiting coroutine, never lost
                setter, value = set_exception, exc
            with self._cond:  # the cores come back before the result: the caller's next job finds them free
                self._busy -= 1
                self._free += hold.threads or 0
                self._running.remove(hold)
                if hold.asked:
                    self._asked -= 1
                self._cond.notify_all()
            deliver(job, setter, value)
