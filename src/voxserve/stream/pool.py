"""A bounded pool of synthesis worker threads: one deadline rule for all model work.

Every unit of model work (a segment's text, or one decoder window) is submitted with a deadline, the
moment its listener would run out of audio (a new stream's first audio is due at once), and the work
it is expected to cost, learned on this machine (:class:`voxserve.engines.windowing.WindowCost`).
Jobs run in order of their latest start, ``deadline - cost``: the job with the least time to spare
first; a first audio's latest start is its arrival (it cannot start sooner). So a new caller's first
audio comes before later audio of a stream that is ahead, and a stream close to running dry comes
before both: a stream already playing does not run dry for one that arrived after it, nor for several
queued at once (:meth:`~voxserve.stream.sharing.CoreSharing._gives_way`).

With ``cores`` and ``levels`` (elastic ONNX sessions, CPU only), jobs share the cores instead of each
taking all of them: a job runs with the widest thread count in ``levels`` that fits both the cores
free now and an equal share of the cores among the streams producing audio (fewer, when fewer still
get it done by its deadline), and waits while no core is free. The rules for sharing them live in
:mod:`voxserve.stream.sharing`.

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
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from voxserve.engines.onnx import set_thread_budget, thread_budget
from voxserve.engines.preemption import preemptible
from voxserve.errors import Overloaded
from voxserve.stream.jobs import ActiveStream, Hold, Job, cancel, deliver, set_exception, set_result
from voxserve.stream.margin import MarginMeter
from voxserve.stream.sharing import CoreSharing
from voxserve.types import SchedulerStats

T = TypeVar("T")

# what a new stream the pool refuses is told (:meth:`WorkerPool._refuse`)
REFUSED = "server at capacity: the streams playing need every core; retry shortly or use another replica"

log = logging.getLogger(__name__)


class WorkerPool(CoreSharing):
    """``await pool.run(fn, deadline=...)`` runs ``fn()`` on a worker thread."""

    def __init__(
        self,
        workers: int = 1,
        name: str = "voxserve-worker",
        *,
        cores: int | None = None,
        levels: tuple[int, ...] = (),
        job_threads: int = 1,
    ) -> None:
        super().__init__(cores, levels)
        self._workers = workers
        self._job_threads = job_threads  # threads a job runs with when the pool does not share cores
        self._held_core_s = 0.0
        self._seq = itertools.count()
        self._closed = False
        self._busy = 0
        self.preemptions = 0  # model calls stopped for a job that was running late (for tests and metrics)
        # how long before its listener runs dry a playing stream's work is due; the sessions teach it, as
        # they see each job's expected cost, its work, and when its result reached them
        self.margin = MarginMeter()
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
        """Jobs running now, jobs waiting (queued, or stopped for a late one), calls stopped, and the
        playing margin."""
        with self._cond:
            queued = len(self._heap) + len(self._waiting)
            return SchedulerStats(len(self._running), queued, self.preemptions, self.margin.margin_s)

    @property
    def held_core_s(self) -> float:
        """Core-seconds jobs have held the cores so far: each job's wall time times its threads."""
        with self._cond:
            return self._held_core_s

    def _release(self, hold: Hold) -> None:
        """A running job gives its cores back (done, or stopped for a late one) (lock held)."""
        self._free += hold.threads or 0
        self._running.remove(hold)
        self._held_core_s += (time.monotonic() - hold.started) * (hold.threads or self._job_threads)
        if hold.asked:
            hold.asked = False
            self._asked -= 1

    def stoppable_s(self) -> float:
        """The most seconds a running model call could give away now and still be done in time: a late
        job costing less would stop it (see :meth:`_preempt_for`); 0 when none could be."""
        with self._cond:
            now = time.monotonic()
            calls = [h.spare(now, self._restart(h)) for h in self._running if h.armed is not None and not h.asked]
            return max(calls, default=0.0)

    @contextlib.contextmanager
    def streaming(
        self,
        deadline: Callable[[], float] | None = None,
        spare: Callable[[], float] | None = None,
        need: Callable[[int], float | None] | None = None,
    ) -> Iterator[ActiveStream]:
        """Count the caller as a stream producing audio while inside the block (see :attr:`load`).

        ``deadline`` tells when the stream's listener next needs audio (read under the pool's lock, so
        it must be quick): a stream past it counts among the overdue ones that share the cores even
        between its jobs, while its last audio is delivered and its next job not yet submitted.
        ``spare`` tells how much audio it has coming beyond what keeps it gaining (see :meth:`_waits`),
        ``need`` its seconds of work per second of audio at a thread count (see
        :func:`~voxserve.stream.jobs.weighed`)."""
        entry = ActiveStream(deadline, spare, need)
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

    async def run(
        self,
        fn: Callable[[], T],
        *,
        deadline: float | None = None,
        cost: float = 0.0,
        playing: bool = True,
        stream: ActiveStream | None = None,
        threads: int | None = None,
        new: bool = False,
    ) -> T:
        """Run ``fn()`` on a worker when its turn comes: least time to spare first.

        ``deadline`` (default: now) is when the result is needed and ``cost`` the expected seconds of
        work. A ``playing`` stream's listener runs dry at the deadline, so the job must start ``cost``
        before it; a new stream's first audio (not ``playing``) is due on arrival and can only start
        then, so it never overtakes a playing stream whose listener needs audio sooner. A job that
        would start late may stop running jobs that can afford it (see the module docstring).
        ``stream`` names the stream the job makes audio for (see :meth:`hold_limit`), and ``threads`` the
        thread count ``cost`` was planned at (None: not known; then it runs on its share of the cores,
        never on fewer threads to leave a core free: see :meth:`_enough`). A ``new`` stream's first audio
        (its first ever) may be refused with :class:`~voxserve.errors.Overloaded` (:meth:`_overstayed`)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        due = deadline if deadline is not None else time.monotonic()
        cost = max(cost, 0.0)
        start_by = due - cost if playing else due
        job = Job(
            start_by, next(self._seq), fn, loop, future, due, cost, stream, not playing, threads, new and not playing
        )
        with self._cond, self._reads:
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
        if self._waits(job, now) is not None:
            return  # a new stream held back for thin streams takes no one's cores
        ahead = [j for j in self._heap if j is not job and (j.start_by, j.seq) < (job.start_by, job.seq)]
        want = self._overdue_level(self.cores, self._overdue(now)) if job.overdue(now) else 1
        if job.first:  # it takes no more than its equal share (:meth:`_threads_for`): stop no more for it
            want = min(want, self._level(self.cores))
        coming = self._free + sum(h.threads or 0 for h in self._running if h.asked) - len(ahead)
        if coming >= want:
            return
        if coming >= 1 and not job.late(now):
            return  # a core is free for it now; more would only be nice
        soonest = min((h.remaining(now) for h in self._running), default=0.0)
        if not job.late(now + soonest):
            return  # a running job will be done before its latest start
        spares = {hold: hold.spare(now, self._restart(hold)) for hold in self._running}
        for hold in sorted(self._running, key=spares.__getitem__, reverse=True):
            spare = spares[hold]
            if coming >= want or spare <= 0 or spare < job.cost:
                break
            if hold.asked:
                continue
            hold.asked = True
            self._asked += 1
            coming += hold.threads or 0
            if hold.armed is not None:
                hold.armed.terminate = True

    def _restart(self, hold: Hold) -> int | None:
        """The threads a running job would be readmitted with if stopped now: no more than it holds, nor
        than an equal share of the cores among the streams producing audio (lock held)."""
        if self.cores is None or hold.threads is None:
            return hold.threads
        return min(hold.threads, self._level(self.cores))

    def _resume(self, hold: Hold) -> None:
        """A stopped job gives its cores back and waits to be readmitted, ahead of later latest starts:
        its own is its deadline less its work done again at the threads it is expected to get back
        (:meth:`_restart`), not the cost it was queued with, which may have been for every core."""
        with self._cond:
            latest = hold.job.due - hold.cost_at(self._restart(hold))
            self._release(hold)
            self.preemptions += 1
            log.debug("stopped a job due in %.2f s for a stream's first audio", hold.job.due - time.monotonic())
            entry = (latest, hold.job.seq, hold)
            heapq.heappush(self._waiting, entry)
            self._cond.notify_all()
            while not self._closed:
                wake = None
                if self._free >= 1 and self._waiting[0] is entry:
                    with self._cond, self._reads:
                        now = time.monotonic()
                        queued, wake = self._next_job(now)
                        if queued is None or (queued.start_by, queued.seq) > entry[:2]:
                            wake = self._yields(hold.job, now)
                            if wake is None:
                                break
                self._cond.wait(None if wake is None else max(0.0, wake - time.monotonic()))
            self._waiting.remove(entry)
            heapq.heapify(self._waiting)
            hold.readmitted(self._level(self._free) if self._free >= 1 else 1, time.monotonic())
            self._free -= hold.threads or 0
            self._running.append(hold)
        set_thread_budget(hold.threads)

    def _refuse(self) -> None:
        """Refuse the new streams whose first audio waited for thin streams as long as it may and still
        cannot start without taking a core they need (:meth:`_overstayed`) (lock held)."""
        if self.cores is None or not self._heap:
            return
        with self._reads:
            refused = self._overstayed(time.monotonic())
        for job in refused:
            self._heap.remove(job)
            deliver(job, set_exception, Overloaded(REFUSED, retry_after_s=1.0))
        heapq.heapify(self._heap)

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
                job: Job | None = None
                while not self._closed:
                    self._refuse()
                    job, wake = self._ready()
                    if job is not None:
                        break
                    self._cond.wait(None if wake is None else max(0.0, wake - time.monotonic()))
                if self._closed and not self._heap:
                    return
                if job is None or job is self._heap[0]:
                    job = heapq.heappop(self._heap)
                else:
                    self._heap.remove(job)
                    heapq.heapify(self._heap)
                if job.future.cancelled():  # caller went away while queued: skip the work
                    continue
                self._busy += 1
                now = time.monotonic()
                threads = self._threads_for(job, job.overdue(now))
                self._free -= threads or 0
                hold = Hold(self._cond, self._resume, job, threads, job.late(now), self._cost_at(job, threads))
                self._running.append(hold)
            setter: Callable[[asyncio.Future[Any], Any], None]
            try:
                with thread_budget(threads), preemptible(hold if self.cores is not None else None):
                    setter, value = set_result, job.fn()
            except BaseException as exc:  # handed to the awaiting coroutine, never lost
                setter, value = set_exception, exc
            with self._cond:  # the cores come back before the result: the caller's next job finds them free
                self._busy -= 1
                self._release(hold)
                self._cond.notify_all()
            deliver(job, setter, value)
