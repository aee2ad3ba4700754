"""How the worker pool (:mod:`voxserve.stream.pool`) shares the cores among streams: which queued job a
worker starts, with how many threads, and how long a running job may hold its cores.

With ``cores`` and ``levels`` (elastic ONNX sessions, CPU only), a job runs with the widest thread count
in ``levels`` that fits both the cores free now and its stream's fair share of the cores among the
streams producing audio, and waits while no core is free. One stream alone decodes on every core; two
on two cores decode side by side, one core each. But a job done in time on fewer threads runs on fewer
(:meth:`CoreSharing._enough`), leaving a core to a caller who arrives meanwhile. Shares follow what the streams need
(:func:`weighed`): beside a stream that needs a tenth of the cores it needs (a Piper voice
beside a Kokoro one), a stream decodes as if it were nearly alone, not on half the cores, while no
other stream needs a core before its job is done (:meth:`CoreSharing._fair`), and waits a moment for
the cores a short job holds when that finishes it sooner (:meth:`CoreSharing._widens`); the lighter
stream still counts the heavier one as a whole stream.

A job whose result is already due when it is started (a first audio, or a listener about to run dry)
takes its equal share of the cores with the other such jobs, within the free ones, at the thread level
nearest that share. Streams tell the pool their deadline
(:meth:`~voxserve.stream.pool.WorkerPool.streaming`), so one that is due counts among them between its
jobs too: two streams short of audio decode side by side rather than taking turns on every core. A
stream has one job at a time, so between two of them (while its audio is delivered and its next window
planned) it has none queued; a queued job leaves the last free cores to such streams that need audio
before it does, or the job of a stream with more audio in hand would take every core a shorter stream's
window frees. :meth:`CoreSharing.hold_limit` tells a stream sizing its next window how long it may hold
cores before another stream needs one.

A new stream's first audio waits while a playing stream is *thin* (too little audio coming to keep
gaining once every stream runs) and the new one would lower the playing streams' share of the cores
(:meth:`CoreSharing._waits`), at most :data:`FIRST_AUDIO_WAIT` times its own expected work, and is then
refused if it still would (:meth:`CoreSharing._overstayed`): a stream admitted earlier must not run dry
because of one that came later. Meanwhile the cores go to the streams already playing, and its waiting
job bounds none of their windows (:meth:`CoreSharing.hold_limit`). Once let go, it takes at most its
equal share of the cores among the streams running (:meth:`CoreSharing._threads_for`), and gives way
to a playing stream's job that the first audios queued ahead of it would start past its latest start
(:meth:`CoreSharing._gives_way`): a first audio is never stopped once started.

The state lives here and is guarded by the pool's lock (``_cond``); every method named with a leading
underscore is called with it held. One decision (which job starts, with how many threads, how long a
window may hold its cores) reads each stream's need and spare once (:class:`~voxserve.stream.jobs.Reads`).
"""

from __future__ import annotations

import math
import threading
import time

from voxserve.stream import jobs
from voxserve.stream.jobs import ActiveStream, Hold, Job, Reads, weighed

# How long a new stream's first audio may wait for thin streams, in its own expected work after its arrival.
# In a burst, the streams that just got their first window are all thin at once, and each newcomer let go
# takes a core their second windows need; a wait of the job's own work let newcomers go before those
# windows were done (docs/benchmarks.md, "A first audio waits longer for thin streams (stop 38)").
FIRST_AUDIO_WAIT = 3.0


class CoreSharing:
    """The cores, the queued, running and stopped jobs, and the streams they make audio for."""

    def __init__(self, cores: int | None, levels: tuple[int, ...]) -> None:
        if cores is not None and (not levels or min(levels) != 1 or max(levels) > cores):
            raise ValueError(f"thread levels {levels} do not fit {cores} cores")
        self.cores = cores
        self._levels = sorted(levels, reverse=True)
        self._free = cores or 0
        self._cond = threading.Condition()
        self._heap: list[Job] = []
        self._streams: list[ActiveStream] = []
        self._running: list[Hold] = []
        self._waiting: list[tuple[float, int, Hold]] = []  # stopped jobs waiting for cores, by latest start
        self._asked = 0  # running jobs asked to give their cores back, not yet done so
        self._workers = 1  # worker threads (the pool sets it)
        self._reads = Reads()  # what the decision under way has read

    def _needs(self) -> dict[ActiveStream, float | None]:
        """Every stream's seconds of work per audio second at one thread (:meth:`ActiveStream.needs`),
        read once per decision (lock held)."""
        return self._reads.once("needs", lambda: {s: s.needs() for s in self._streams})

    def _need(self, stream: ActiveStream, threads: int = 1) -> float | None:
        """``stream``'s seconds of work per audio second at ``threads``, read once per decision (lock held)."""
        needs = self._needs() if threads == 1 else {}
        if stream in needs:
            return needs[stream]
        return self._reads.once(("need", stream, threads), lambda: stream.needs(threads))

    def share(self, held: bool = True, need: float | None = None, newcomer: bool = False) -> tuple[int | None, float]:
        """(threads a stream's job gets, or None without shared cores; streams per job slot, >= 1).

        ``held``: with the new streams held back for thin ones (:meth:`_waits`) counted, as once every
        stream runs (what a stream needs to stay ahead, see :meth:`_thin`); without them, as now (what
        a stream's next window is planned with). ``need``: the cores the asking stream keeps busy
        (:attr:`ActiveStream.need`), so that lighter streams count less (:func:`weighed`); None: every
        stream counts as a whole one. ``newcomer``: the threads were one more stream to arrive (the load as is)."""
        with self._cond, self._reads:
            if self.cores is None:
                return None, max(1.0, len(self._streams) / self._workers)
            return self._reads.once(("share", held, need, newcomer), lambda: self._share(held, need, newcomer))

    def _share(self, held: bool, need: float | None, newcomer: bool) -> tuple[int, float]:
        """:meth:`share` with shared cores (lock held)."""
        assert self.cores is not None
        streams = self._counted(need, held, time.monotonic())
        threads = self._level(self.cores, streams + 1 if newcomer else streams)
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
        with self._cond, self._reads:
            now = time.monotonic()

            def others(job: Job) -> bool:
                return stream is None or job.stream is not stream

            held = self._held(now)  # new streams waiting for this one's lead: they need no core yet
            running = [h for h in self._running if others(h.job)]
            waiting = [j for j in self._heap if others(j) and not (j.first and j.stream in held)]
            waiting += [h.job for _, _, h in self._waiting if others(h.job)]
            needs = [j.start_by for j in waiting]
            needs += [s.deadline() for s in self._between(stream) if s.deadline is not None]
            ends = [(h.started + h.cost, h.threads or 0) for h in running]
            return jobs.first_shortfall(self.cores, threads, needs, ends) - now

    def crowded(self, threads: int | None) -> bool:
        """Whether more playing streams are thin (:meth:`_thin`) than jobs of ``threads`` can run at once.
        Then a stream short of audio cannot count on a core at once from streams with audio to spare, and
        a window cut below the gaining size to come in time would only spend more of the cores on context:
        every stream cutting at once is how a load near the cores' limit tips past it and stays there."""
        with self._cond, self._reads:
            slots = self._workers if self.cores is None else self.cores // max(1, threads or 1)
            return len(self._thin()) > slots

    def _level(self, free: int, streams: float | None = None) -> int:
        """The widest thread level within ``free`` cores and an equal share among ``streams`` (default:
        the streams running now, each counted whole), rounded to whole streams (lock held)."""
        assert self.cores is not None
        streams = len(self._producing(time.monotonic())) if streams is None else streams
        fair = max(1, self.cores // max(1, math.floor(streams + 0.5)))
        return next(n for n in self._levels if n <= min(free, fair))

    def _cores_each(self, streams: float) -> float:
        """The cores each of ``streams`` streams decodes on: its thread level, over the streams sharing
        each job slot (lock held)."""
        assert self.cores is not None
        threads = self._level(self.cores, streams)
        return threads / max(1.0, streams / (self.cores // threads))

    def _counted(self, need: float | None, held: bool, now: float) -> float:
        """The streams (``held``: all of them; else those producing audio now) counted as heavy as one that
        needs ``need`` (:func:`weighed`), once per decision (lock held)."""

        def count() -> float:
            needs = self._needs()
            return weighed(need, needs.values() if held else [needs[s] for s in self._producing(now)])

        return self._reads.once(("count", need, held), count)

    def _producing(self, now: float) -> list[ActiveStream]:
        """Streams producing audio, less the new ones whose first audio is held back now (lock held)."""

        def producing() -> list[ActiveStream]:
            held = self._held(now)
            return [s for s in self._streams if s not in held] if held else list(self._streams)

        return self._reads.once("producing", producing)

    def _held(self, now: float) -> set[ActiveStream | None]:
        """The new streams whose first audio is held back now for thin streams (lock held)."""
        return self._reads.once("held", lambda: {j.stream for j in self._heap if self._waits(j, now) is not None})

    def _ready(self) -> tuple[Job | None, float | None]:
        """The queued job a worker may start now, or None and when to look again (``None``: when the
        pool changes) (lock held).

        A job leaves the last free cores to the streams between two jobs that need audio before it does
        (:meth:`_yields`), and a new stream's first audio may wait for thin streams (:meth:`_waits`)."""
        if not self._heap:
            return None, None
        if self.cores is None:
            return self._heap[0], None
        if self._free < 1:
            return None, None
        with self._cond, self._reads:
            return self._ready_now(time.monotonic())

    def _ready_now(self, now: float) -> tuple[Job | None, float | None]:
        """:meth:`_ready` with shared cores, some free and a job queued (lock held)."""
        top, opens = self._next_job(now)
        if top is None or (self._waiting and self._waiting[0][:2] < (top.start_by, top.seq)):
            return None, opens
        if top.overdue(now) and self._asked:
            return None, None  # cores are being freed: take them at once
        wake = self._yields(top, now)
        if wake is None:
            wake = self._widens(top, now)
        if wake is not None:
            return None, wake if opens is None else min(wake, opens)
        return top, None

    def _widens(self, job: Job, now: float) -> float | None:
        """Until when ``job`` waits for a wider share of the cores than it would start with now, if
        running jobs hold them that are expected to be done soon enough for it to finish sooner on
        them; else None (lock held).

        Beside a light stream, a heavy one may keep every core (:meth:`_fair`), but the light stream's
        short job may hold one of them when the heavy one's window is queued; started at once on the
        core left, that window would run narrow for as long as it lasts, the other core idle once the
        short job is done. Narrower, it takes as much longer as its stream's learned work per audio
        second at the two widths says (:attr:`~voxserve.stream.jobs.ActiveStream.need`); it waits when
        the cores come free sooner than that. A first audio or an overdue job starts at once
        (:meth:`_threads_for`)."""
        if job.overdue(now) or job.stream is None or job.cost <= 0:
            return None
        narrow, free = self._fair(job, self._free, now), self._free
        for hold in sorted((h for h in self._running if not h.asked), key=lambda h: h.remaining(now)):
            end = now + hold.remaining(now)
            free += hold.threads or 0
            wide = self._fair(job, free, now, start=end)
            if wide > narrow:
                wide_s, narrow_s = self._need(job.stream, wide), self._need(job.stream, narrow)
                if wide_s is None or narrow_s is None or end <= now:
                    return None
                return end if end - now < job.cost * (narrow_s / wide_s - 1.0) else None
        return None

    def _fair(self, job: Job, free: int, now: float, start: float | None = None) -> int:
        """The threads ``job``'s fair share of the cores gives it within ``free`` cores, started at
        ``start`` (default: now), among the streams producing audio now (lock held).

        Counted by need (:func:`weighed`), a heavy stream's share beside light ones is wider than an
        equal one. It takes that width only if it can hold those cores for its expected cost without
        another stream needing one meanwhile (:meth:`_room`): a light stream's next window is often due
        soon after its last, and would otherwise wait for the whole of the heavy one's. Else it takes
        the equal share, and the light streams keep a core."""
        start = now if start is None else start
        equal = self._level(free, len(self._producing(now)))
        need = self._need(job.stream) if job.stream is not None else None
        wide = self._level(free, self._counted(need, False, now))
        return self._enough(job, wide if wide <= equal or self._room(job, wide, start, now) else equal, start)

    def _enough(self, job: Job, threads: int, start: float) -> int:
        """The fewest threads, up to ``threads``, that get ``job`` done by its deadline if started at
        ``start`` (:meth:`_cost_at`); ``threads`` for a first audio or a job of unknown cost (lock held).

        A stream well ahead of its listener gains only a lead it cannot use (it is paced) from every
        core, where its window would keep a caller who arrives meanwhile waiting, or be stopped for it
        (its work thrown away). On fewer it leaves that caller a core, and does more per core-second."""
        if job.first or job.threads is None or job.cost <= 0 or threads <= 1:
            return threads
        fewer = (n for n in sorted(self._levels) if n < threads and start + self._cost_at(job, n) <= job.due)
        return next(fewer, threads)

    def _cost_at(self, job: Job, threads: int | None) -> float:
        """``job``'s expected work at ``threads`` threads: its cost (planned at ``job.threads``) scaled by
        its stream's learned work per audio second at the two counts, if known (lock held)."""
        if threads is None or job.threads is None or threads == job.threads or job.stream is None:
            return job.cost
        return jobs.cost_at(job.cost, self._need(job.stream, job.threads), self._need(job.stream, threads))

    def _room(self, job: Job, threads: int, start: float, now: float) -> bool:
        """Whether ``job`` can hold ``threads`` cores from ``start`` for its expected cost without another
        stream needing a core before it is done: neither one between jobs or queued
        (:meth:`hold_limit`) nor one whose job runs now, by its deadline as it stands (before that job's
        audio: what a stream about to run dry, or before its first audio, needs soonest) (lock held)."""
        done = start + job.cost
        if done > now + self.hold_limit(job.stream, threads):
            return False
        others = (h.job.stream for h in self._running if h.job.stream is not job.stream)
        return all(s is None or s.deadline is None or s.deadline() >= done for s in others)

    def _next_job(self, now: float) -> tuple[Job | None, float | None]:
        """The first queued job by latest start that is not held back (:meth:`_waits`), and when the
        first held-back one before it may go after all (lock held). A new stream's first audio gives
        way to a playing stream's job that the first audio queued ahead of it would start late
        (:meth:`_gives_way`)."""
        if not self._heap or not self._heap[0].first:
            return (self._heap[0] if self._heap else None), None
        opens: float | None = None
        order = sorted(self._heap)
        for i, job in enumerate(order):
            until = self._waits(job, now)
            if until is None:
                return (self._gives_way(order[i:], now) or job) if job.first else job, opens
            opens = until if opens is None else min(opens, until)
        return None, opens

    def _gives_way(self, queue: list[Job], now: float) -> Job | None:
        """The playing stream's job that would start past its latest start if ``queue`` (a first audio,
        then every job after it by latest start) ran in that order, else None (lock held).

        A first audio is due on arrival, so it is ordered before a playing stream's job whose latest
        start comes later, and once started it is never stopped. Several newcomers queued at once
        would each take a core until done; the playing job that would wait past its latest start
        behind them goes first. Jobs are counted at the thread level a stream's job gets now, in job
        slots that come free as the running jobs are expected to end."""
        assert self.cores is not None
        level = self._level(self.cores)
        ends = sorted(now + h.remaining(now) for h in self._running if not h.asked)
        free_at = ([now] * (self._free // level) + ends)[: max(1, self.cores // level)]
        return jobs.first_late(free_at or [now], queue)

    def _thin(self) -> list[ActiveStream]:
        """Playing streams with too little audio coming to keep gaining once every stream runs (their
        ``spare`` below 0; a stream before its first audio has all it needs) (lock held)."""
        return self._reads.once("thin", lambda: [s for s in self._streams if s.spare is not None and s.spare() < 0])

    def _waits(self, job: Job, now: float) -> float | None:
        """Until when a new stream's first audio waits for thin streams, if it must wait now; else None
        (lock held).

        A stream playing with less audio coming than it needs to keep gaining once every stream runs
        (its ``spare`` below 0) falls further behind as more streams share the cores: a new stream
        whose start lowers the playing streams' share of the cores makes a thin one run dry, and then
        itself. So a first audio that would lower that share waits while any playing stream is thin,
        and meanwhile does not count in the share (:meth:`_producing`): the thin stream decodes
        on the cores the new one would take, and gains. It waits at most :data:`FIRST_AUDIO_WAIT` times
        its own expected work after its arrival, so first audio stays within a few times a lone
        stream's; then it is refused if it still would (:meth:`_overstayed`)."""
        until = _wait_ends(job)
        return until if job.first and now < until and self._thins(job, now) else None

    def _thins(self, job: Job, now: float) -> bool:
        """Whether starting ``job``, a first audio, would lower a thin stream's share of the cores (lock held)."""
        if self.cores is None or not self._thin():
            return False
        needs = self._needs()
        mine = [needs[job.stream]] if job.stream is not None and job.stream in needs else []  # none: not counted
        for need in {needs[s] for s in self._thin()}:  # a thin one's share of the cores drops with it
            every = self._counted(need, True, now)
            if self._cores_each(every) < self._cores_each(every - weighed(need, mine)):
                return True
        return False

    def _overstayed(self, now: float) -> list[Job]:
        """New streams' first audios that waited their whole bound (:meth:`_waits`) and would still lower a
        thin stream's share: admission let them in past what the machine feeds now, and started, one
        would make a stream that came before it run dry. They are refused, as admission would have. A
        first audio after a wait for the client's text (:attr:`Job.new` false) goes: its listener is
        already served (lock held)."""
        return [j for j in self._heap if j.new and now >= _wait_ends(j) and self._thins(j, now)]

    def _yields(self, job: Job, now: float) -> float | None:
        """Until when ``job`` leaves the free cores to streams between two jobs whose listener needs audio
        before its own does, if it must; else None (lock held). Such a stream submits its next job a
        moment after its last one ended; the job waits at most until its own deadline."""
        if job.due <= now or self._free > len(self._streams):
            return None  # its own listener needs the audio now, or there is a core for every stream anyway
        short = sum(s.deadline() < job.due for s in self._between() if s.deadline is not None)
        return job.due if self._free - 1 < short else None

    def _between(self, exclude: ActiveStream | None = None) -> list[ActiveStream]:
        """Streams between two jobs: none of theirs queued, running or stopped (lock held)."""
        busy = {h.job.stream for h in self._running} | {j.stream for j in self._heap}
        busy |= {h.job.stream for _, _, h in self._waiting}
        return [s for s in self._streams if s is not exclude and s not in busy]

    def _overdue(self, now: float, starting: int = 0) -> int:
        """Jobs whose result is already needed, ``starting`` ones included: queued, running, or to come
        from streams past their deadline between two jobs, whichever count is larger (lock held)."""
        held = self._held(now)
        queued = sum(j.overdue(now) and not (j.first and j.stream in held) for j in self._heap)
        jobs = sum(h.job.overdue(h.started) for h in self._running) + queued
        streams = sum(s.deadline is not None and s.deadline() <= now for s in self._streams if s not in held)
        return max(jobs + starting, streams)

    def _overdue_level(self, free: int, overdue: int) -> int:
        """An overdue job's threads: its equal share of the cores with the other overdue jobs
        (:func:`~voxserve.stream.jobs.nearest_level`)."""
        assert self.cores is not None
        return jobs.nearest_level(self._levels, free, max(1, self.cores // max(1, overdue)))

    def _threads_for(self, job: Job, overdue: bool) -> int | None:
        """The threads ``job`` starts with: an overdue job's share among the overdue ones, but a first
        audio's no more than its equal share among the streams running (it is due on arrival, and would
        otherwise take the cores a playing stream between two jobs is about to need) (lock held)."""
        if self.cores is None:
            return None
        with self._cond, self._reads:
            now = time.monotonic()
            fair = self._fair(job, self._free, now)
            if not overdue:
                return fair
            level = self._overdue_level(self._free, self._overdue(now, starting=1))
            return min(level, fair) if job.first else level


def _wait_ends(job: Job) -> float:
    """When a first audio's wait for thin streams ends: :data:`FIRST_AUDIO_WAIT` times its expected work
    after it was due (its arrival)."""
    return job.due + FIRST_AUDIO_WAIT * job.cost
