"""What the worker pool (:mod:`voxserve.stream.pool`) queues and runs: jobs, the streams they make audio
for, a running job's hold on its cores, and handing a result back to the job's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import onnxruntime as ort

T = TypeVar("T")


@dataclass(order=True)
class Job:
    """A unit of model work waiting for, or holding, a worker and cores."""

    start_by: float  # its latest start: the order jobs run in
    seq: int
    fn: Callable[[], Any] = field(compare=False)
    loop: asyncio.AbstractEventLoop = field(compare=False)
    future: asyncio.Future[Any] = field(compare=False)
    due: float = field(default=0.0, compare=False)  # when the result is needed
    cost: float = field(default=0.0, compare=False)  # expected seconds of work
    stream: ActiveStream | None = field(default=None, compare=False)  # whose audio it makes
    first: bool = field(default=False, compare=False)  # a new stream's first audio
    threads: int | None = field(default=None, compare=False)  # what ``cost`` is planned at (None: not known)
    new: bool = field(default=False, compare=False)  # a stream's first audio ever (not one after a wait for text)

    def late(self, now: float) -> bool:
        """Whether the job's latest start has passed."""
        return self.due - self.cost <= now

    def overdue(self, now: float) -> bool:
        """Whether its result is already needed: a first audio, or a listener that has run dry."""
        return self.due <= now


@dataclass(frozen=True, eq=False)  # each entry is its own stream: compared by identity
class ActiveStream:
    """A stream producing audio (see :meth:`voxserve.stream.pool.WorkerPool.streaming`); its jobs name
    it, so the pool knows which streams are between two jobs. ``deadline`` tells when its listener next
    needs audio; ``spare`` how much more audio it has coming than it needs to keep gaining on playback
    at the pool's load (below 0: it is thin, and a new stream must not take its core); ``need`` the
    seconds of work per second of its audio at a thread count, as learned (None: not known), which at
    one thread are the cores it keeps busy keeping pace with its listener."""

    deadline: Callable[[], float] | None
    spare: Callable[[], float] | None = None
    need: Callable[[int], float | None] | None = None

    def needs(self, threads: int = 1) -> float | None:
        """Seconds of work per second of this stream's audio at ``threads`` threads (None: not known)."""
        return self.need(threads) if self.need is not None else None


class Hold:
    """A running job's side of :class:`~voxserve.engines.preemption.Preemption`; its state is guarded
    by the pool's lock (``cond``), and ``resume`` waits until the pool readmits it."""

    def __init__(
        self,
        cond: threading.Condition,
        resume: Callable[[Hold], None],
        job: Job,
        threads: int | None,
        late: bool,
        cost: float | None = None,
    ) -> None:
        self._cond, self._resume = cond, resume
        self.job, self.threads, self.late = job, threads, late
        # expected seconds of its work at ``threads`` (default: the job's; made again after a stop: see below)
        self.cost = job.cost if cost is None else cost
        self.started = time.monotonic()
        self.armed: ort.RunOptions | None = None  # the model call in flight
        self.asked = False  # the pool wants this job's cores

    def arm(self, options: ort.RunOptions) -> bool:
        with self._cond:
            if self.asked:
                return False
            self.armed = options
            return True

    def disarm(self) -> bool:
        with self._cond:
            self.armed = None
            return self.asked

    def resume(self) -> None:
        self._resume(self)

    def remaining(self, now: float) -> float:
        """Expected seconds until the job is done."""
        return max(0.0, self.cost - (now - self.started))

    def cost_at(self, threads: int | None) -> float:
        """Expected seconds of the job's work done again from its start with ``threads`` threads: its cost
        times the ratio of the thread counts, as if its work scaled perfectly with cores. A job stopped
        on every core of a small box is readmitted beside the streams it was stopped for, on fewer
        cores, and takes that much longer. Priced by its stream's learned costs at the two counts
        instead, a window stopped this way was readmitted too late and its listener ran dry
        (docs/benchmarks.md, "A stopped window is priced at the cores it gets back (stop 58)")."""
        was = self.threads
        if threads is None or was is None or threads >= was:
            return self.cost
        return self.cost * was / threads

    def spare(self, now: float, threads: int | None = None) -> float:
        """Seconds the job could give away and still be done in time, doing its work again with
        ``threads`` threads (:meth:`cost_at`; default: its own)."""
        if self.late or self.cost <= 0:
            return 0.0  # late itself, or nothing known of its work: never stopped
        return self.job.due - now - self.cost_at(threads)

    def readmitted(self, threads: int | None, now: float) -> None:
        """The job runs again from ``now`` with ``threads`` threads: its cost is what its work takes
        at that count, and it is late if that cost no longer fits before its deadline (then it is never
        stopped again)."""
        self.cost = self.cost_at(threads)
        self.threads, self.started = threads, now
        self.late = self.job.due - self.cost <= now


class Reads:
    """What one decision of the pool has read, so that it reads each thing once however many of its
    steps ask (see :mod:`voxserve.stream.sharing`). Entered (``with reads:``) for a decision, under the
    pool's lock, which is never waited on inside one: what another thread changes meanwhile is read
    afresh by the next decision. A decision entered inside another is part of it."""

    def __init__(self) -> None:
        self._memo: dict[Hashable, Any] | None = None  # None: no decision under way
        self._depth = 0

    def __enter__(self) -> None:
        if not self._depth:
            self._memo = {}
        self._depth += 1

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._memo = None

    def once(self, key: Hashable, read: Callable[[], T]) -> T:
        """``read()``, read once in the decision under way under ``key`` (every time outside one)."""
        memo = self._memo
        if memo is None:
            return read()
        if key not in memo:
            memo[key] = read()
        value: T = memo[key]
        return value


def first_shortfall(cores: int, threads: int, needs: list[float], ends: list[tuple[float, int]]) -> float:
    """The first moment a job holding ``threads`` of ``cores`` would leave another stream short
    (``inf``: never). ``needs`` are when the other streams need a core, ``ends`` when the running jobs
    are expected to be done and the cores each holds: taken tightest first, the i-th need must find
    ``i * threads`` cores free besides the job's own."""
    for i, need in enumerate(sorted(needs), 1):
        free = cores - sum(n for end, n in ends if end > need)
        if free - threads < i * threads:
            return need
    return math.inf


def first_late(free_at: list[float], queue: list[Job]) -> Job | None:
    """The first playing job of ``queue`` that would start after its latest start if the jobs ran in
    that order, each on the first of the job slots that comes free (``free_at``: when each slot is free,
    taking the expected costs as they are); None when every playing job would start in time. A new
    stream's first audio has no latest start: it is due on arrival."""
    slots = sorted(free_at)
    for job in queue:
        start = heapq.heappop(slots)
        if not job.first and start > job.start_by:
            return job
        heapq.heappush(slots, start + job.cost)
    return None


def cost_at(cost: float, planned: float | None, own: float | None) -> float:
    """A job's expected ``cost`` planned where its stream's learned work per audio second is ``planned``
    (at the thread count it was planned at), where that work is ``own`` (at another count): as much longer
    or shorter; as planned when either is not known."""
    return cost * own / planned if planned and own else cost


def weighed(need: float | None, needs: Iterable[float | None]) -> float:
    """How many streams as heavy as one that keeps ``need`` cores busy streams that need ``needs``
    add up to: each counts its own need over ``need``, at most 1, or 1 when either is not known.

    Equal shares of the cores fit streams that need about the same. A Piper stream needs a tenth
    of what a Kokoro one does; counted whole, it would put the Kokoro stream on half the cores for
    as long as both play, where its windows cannot keep ahead with the planner's margin while the
    Piper stream's core idles between its short jobs. Counted by its need it leaves the Kokoro
    stream its width, and its own short jobs get a core between the Kokoro windows, which
    :meth:`~voxserve.stream.sharing.CoreSharing.hold_limit` bounds by its deadlines. The lighter
    stream counts the heavier one whole: it gets no wider for being light."""
    if need is None or need <= 0:
        return float(sum(1 for _ in needs))
    return sum(1.0 if own is None else min(1.0, own / need) for own in needs)


def nearest_level(levels: list[int], free: int, share: int) -> int:
    """The thread level within ``free`` cores nearest to ``share`` (by ratio), for a job that is late.
    Rounding down would leave cores idle while it is late: with levels (16, 4, 1), five late jobs share
    three cores each, and one thread would make the job three times slower than four."""
    fitting = [n for n in levels if n <= free] or [1]
    return min(fitting, key=lambda n: (abs(math.log(n / share)), n))


def deliver(job: Job, setter: Callable[[asyncio.Future[Any], Any], None], value: Any) -> None:
    """Hand a result to the job's event loop; if that loop is gone, nobody is waiting any more."""
    with contextlib.suppress(RuntimeError):  # the loop closed while the job ran (its caller went away)
        job.loop.call_soon_threadsafe(setter, job.future, value)


def set_result(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def cancel(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.cancel()
