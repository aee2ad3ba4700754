"""How large each decoder window of a stream can be so that its audio keeps ahead of playback.

A window of ``n`` audio seconds costs about ``a + b * n`` seconds of work: ``b`` per audio second, ``a``
per window (the context decoded on both sides and the call itself). Each windowed engine learns ``a``
and ``b`` from the windows it decodes, per thread count (:class:`voxserve.engines.windowing.WindowCost`).
With ``L`` streams per job slot a window takes ``L * (a + b * n)`` of wall time, so only windows longer
than the break-even ``n* = L * a / (1 - L * b)`` add to the audio ahead of playback.

* Each window is cut just before it is decoded, as large as can be done within ``1 / MARGIN`` of the
  audio then ahead of playback (:func:`next_window_s`): the buffer grows by itself, and larger windows
  waste less on context.
* A stream's first window has nothing ahead of it: it is small for fast first audio, but at least
  ``START_MARGIN * n*`` (:func:`start_window_s`), so that the window after it can be done in time and
  still at least break even. No window is smaller than that: with too little ahead a stall is coming
  anyway, and a smaller window would only lose more ground. Alone on a fast machine ``n*`` is below
  the configured first window, which then stands; streams sharing the cores start with larger ones.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from voxserve.engines.base import Engine
from voxserve.engines.onnx import current_thread_budget
from voxserve.stream.jobs import ActiveStream, cost_at
from voxserve.stream.playback import PlaybackClock
from voxserve.stream.pool import WorkerPool
from voxserve.stream.session_config import SessionConfig

log = logging.getLogger(__name__)

# Near capacity the break-even window grows as 1 / (1 - L*b), so a slightly high estimate of b asks for
# huge windows (first audio after seconds) that stall anyway; beyond 2 s a larger start doesn't pay.
GAINING_CAP_S = 2.0
START_MARGIN = 1.5
# a window must be done when 2/3 of the audio ahead has played: room for noise on a shared box
MARGIN = 1.5


def break_even_s(cost: tuple[float, float], load: float) -> float:
    """The window that exactly keeps pace with playback (``inf`` when nothing can)."""
    a, b = cost
    if load * b >= 0.9:
        return float("inf")
    return load * a / (1.0 - load * b)


def start_window_s(first_s: float, max_s: float, cost: tuple[float, float] | None, load: float) -> float:
    """A stream's first window: ``first_s``, or enough above break-even to gain (at most
    :data:`GAINING_CAP_S` and ``max_s``). ``first_s`` while nothing is learned."""
    if cost is None:
        return min(first_s, max_s)
    gaining = min(START_MARGIN * break_even_s(cost, load), GAINING_CAP_S)
    return min(max(first_s, gaining), max_s)


def sustaining_lead_s(first_s: float, max_s: float, cost: tuple[float, float], load: float) -> float:
    """The audio a stream needs ahead of its listener at ``load`` for its next window to gain on
    playback: the gaining window (:func:`start_window_s`) done within ``1 / MARGIN`` of it at its share
    of the cores. With less, that window cannot be done within the margin: the stream decodes a smaller
    one, which wastes more of the cores on context, or one that may come late."""
    a, b = cost
    return MARGIN * load * (a + b * start_window_s(first_s, max_s, cost, load))


def front_s(cost: tuple[float, float]) -> float:
    """The expected work of a segment's front (run before its first window, in the same job): about one
    more window's fixed part."""
    return cost[0]


def next_window_s(
    ahead_s: float,
    first_s: float,
    max_s: float,
    cost: tuple[float, float],
    load: float,
    hold_s: float = float("inf"),
    cut: bool = True,
) -> float:
    """The next window of a stream with ``ahead_s`` of audio not yet played, at most ``max_s``.

    The largest window done within ``ahead_s / MARGIN`` and, when other streams need a core soon, within
    ``hold_s / MARGIN`` (how long it may hold its cores), but never smaller than a first window
    (:func:`start_window_s`): with too little ahead a stall is coming anyway, and a smaller window
    would only lose more ground. Except that a window that cannot be done before the listener runs dry
    even if started at once is cut to one that can, down to the smallest first window (a stream
    alone): right after a small first window, so that a new stream's second window comes in time; and
    later, because a stream short of audio usually gets a core at once from streams with audio to
    spare, and then gains even with the cut window. But only with ``cut``: when more streams are short
    than jobs can run at once (:meth:`~voxserve.stream.sharing.CoreSharing.crowded`) they cannot all
    get a core at once, and cut windows, which decode as much context as audio, would lower what the
    cores make just when it is short: the load tips past the cores' limit and stays there
    (docs/benchmarks.md, "Windows are not cut while the pool is crowded (stop 40)").
    """
    a, b = cost
    affordable = (min(max(ahead_s, 0.0) / load, hold_s) / MARGIN - a) / b
    floor = start_window_s(first_s, max_s, cost, load)
    if cut:
        in_time = (ahead_s / MARGIN - a) / b
        floor = min(floor, max(start_window_s(first_s, max_s, cost, 1.0), in_time))
    return min(max(affordable, floor), max_s)


class WindowPlanner:
    """Sizes one stream's decoder windows from its engine's learned cost, the pool's sharing of the
    cores, and its listener (``clock``): the functions above, applied to a live stream."""

    def __init__(self, engine: Engine, pool: WorkerPool, config: SessionConfig, clock: PlaybackClock) -> None:
        self.engine, self.pool, self.config, self.clock = engine, pool, config, clock
        # (audio sent when the last window was decoded, its audio seconds; None before the first)
        self._made: tuple[float, float] | None = None

    def budget(self, held: bool = False) -> tuple[tuple[float, float] | None, int | None, float]:
        """The engine's learned window cost at the threads this stream's jobs get now, those threads
        (None without shared cores), and the load; ``held``: once the new streams held back for thin
        ones run too (:meth:`~voxserve.stream.pool.WorkerPool.share`). On a worker, cutting the window
        its job decodes, the threads that job runs with: the pool may give a job fewer than its share.

        A playing stream's windows are planned at the threads it would get were one more stream to
        arrive (:meth:`leaves_core`), so that the pool can run them on those (see
        :meth:`~voxserve.stream.sharing.CoreSharing._enough`) and leave a core to the caller who does.
        A job the pool runs on more (too little lead to be done in time on those) decodes the window
        planned there, which the wider share does sooner: sized for every core, it would be as long as
        the lead allows, and a caller arriving meanwhile would wait for all of it."""
        need = self.need()
        threads, load = self.pool.share(held, need)
        leaving = False
        if not held and threads is not None and self.leaves_core():
            fewer, _ = self.pool.share(held, need, newcomer=True)
            leaving = fewer is not None and fewer < threads and self._keeps_pace(fewer)
            threads = fewer if leaving else threads
        running = current_thread_budget()
        if running is not None and threads is not None:
            threads = min(running, threads) if leaving else running
        learned = self.engine.window_cost
        return (learned.fit(threads) if learned is not None else None), threads, load

    def leaves_core(self) -> bool:
        """Whether this stream plans its windows to leave a core to a caller who may arrive: one whose
        listener plays (from its first audio on). Its windows only have to keep ahead of that listener,
        and one planned on every core is as long as its lead allows, so it cannot run on fewer
        (:meth:`~voxserve.stream.sharing.CoreSharing._enough`) nor be stopped in time
        (:meth:`~voxserve.stream.pool.WorkerPool._preempt_for`): a newcomer's first audio then waits
        for the whole window. An unpaced stream counts too: the server cannot tell a client saving a
        file from one playing what arrives, and counts its stalls as a listener's."""
        return self.clock.playing

    def _keeps_pace(self, threads: int) -> bool:
        """Whether this stream's largest windows at ``threads`` are done within ``1 / MARGIN`` of the
        audio they make: its listener stays ahead on that share of the cores."""
        need = self.need(threads)
        return need is not None and need * MARGIN < 1.0

    def need(self, threads: int = 1) -> float | None:
        """Seconds of work per second of this stream's audio at ``threads`` threads, decoding its largest
        windows (None while nothing is learned at that count). At one thread: the cores it keeps busy
        as its listener plays, what the pool shares the cores by
        (:func:`~voxserve.stream.jobs.weighed`); across counts: what a job loses starting
        on fewer cores than its share (:meth:`~voxserve.stream.sharing.CoreSharing._widens`). Read under
        the pool's lock."""
        learned = self.engine.window_cost
        cost = learned.fit(threads) if learned is not None else None
        if cost is None:
            return None
        a, b = cost
        return b + a / self.config.max_window_s

    def cost_at(self, cost: float, planned: int | None, threads: int | None) -> float:
        """A job's expected ``cost`` planned at ``planned`` threads, at ``threads`` instead: scaled by this
        stream's learned work per audio second at the two counts (as planned when either is unknown)."""
        if planned is None or threads is None or planned == threads:
            return cost
        return cost_at(cost, self.need(planned), self.need(threads))

    def plan(self, stream: ActiveStream | None = None) -> tuple[float | None, Callable[[], float | None] | None]:
        """The next segment's first window (``None``: the largest) and what sizes the windows after it
        (``None``: the engine's fixed schedule), for ``stream`` in the pool."""
        cfg = self.config
        cost, _, load = self.budget()
        first: float | None
        if not self.clock.playing:
            first = start_window_s(cfg.first_window_s, cfg.max_window_s, cost, load)
        else:
            first = self.next_s(stream, starts_segment=True)
        return first, (lambda: self.next_s(stream)) if cost is not None else None

    def largest_s(self) -> float:
        """The largest window this stream may take now. A window holds its cores until it is done, so a
        stream played in real time, or any stream while others share the pool, stays within the paced
        maximum: nobody waits behind it for long. An unpaced stream alone (a file, a whole text read as
        fast as it comes) may grow to the engine's largest, for fewer seams."""
        cfg = self.config
        alone_unpaced = not cfg.pace and self.pool.streams <= 1
        return max(cfg.max_window_s, cfg.max_unpaced_window_s) if alone_unpaced else cfg.max_window_s

    def next_s(self, stream: ActiveStream | None = None, starts_segment: bool = False) -> float | None:
        """Audio the next window may hold to be done before its listener needs it (asked from a worker),
        and without holding its cores past the moment another stream needs them
        (:meth:`~voxserve.stream.pool.WorkerPool.hold_limit`). Every stream is sized for a listener
        playing from its first audio, as the server counts them."""
        cfg = self.config
        cost, threads, load = self.budget()
        if cost is None:  # nothing learned at these threads (the warm-up teaches every level)
            return cfg.first_window_s
        largest = self.largest_s()
        if not self.clock.playing:
            return start_window_s(cfg.first_window_s, largest, cost, load)
        # a segment's first job runs its front before the window: that time comes off both bounds
        front = MARGIN * front_s(cost) if starts_segment else 0.0
        hold = self.pool.hold_limit(stream, threads or 1) - front
        ahead = self.clock.ahead_s(time.monotonic()) - load * front
        cut = not self.pool.crowded(threads)
        window = next_window_s(ahead, cfg.first_window_s, largest, cost, load, hold, cut)
        log.debug("window %s s with %.2f s ahead, cost %.3f + %.3f/s, load %.1f", window, ahead, *cost, load)
        return window

    def spare_s(self) -> float:
        """Audio this stream has coming (ahead of its listener, and the window last decoded until its
        audio arrives) beyond what it needs to keep gaining once every stream runs, new ones held back
        included (:func:`sustaining_lead_s`); ``inf`` before its first window is decoded or while nothing
        is learned. Read by the pool, under its lock.

        A window counts from the moment it is decoded (:meth:`made`), not when it is planned: a planned
        window may yet run at fewer threads than it was planned for, once the pool lets a new stream
        take a core because this one looked well supplied, and then come late. Nor only once its audio
        is delivered: the worker that decoded it picks its next job before the event loop delivers it."""
        if self._made is None and not self.clock.playing:
            return float("inf")
        cost, _, load = self.budget(held=True)
        if cost is None:
            return float("inf")
        sent, made = self._made or (0.0, 0.0)
        coming = self.clock.ahead_s(time.monotonic()) + (made if self.clock.audio_s <= sent else 0.0)
        return coming - sustaining_lead_s(self.config.first_window_s, self.config.max_window_s, cost, load)

    def made(self, audio_s: float) -> None:
        """A window of ``audio_s`` is decoded: called on the worker, before its job gives the cores back,
        so that the pool counts that audio as coming from then on, not only once it is delivered."""
        self._made = (self.clock.audio_s, audio_s)

    def segment_cost(self) -> float:
        """The expected seconds of a new segment's first job (its front and a first window), planned now;
        0 while nothing is learned. The job that phonemizes the segment's text runs just before it, and
        is ordered by it: ordered by its own few milliseconds, it would wait behind other streams'
        windows until its listener is about to run dry, and then the front and first window could not
        be done in time. A new stream's first text is due on arrival whatever it costs, but carries the
        cost too, so that the pool holds it back for thin streams as it holds the first window
        (:meth:`~voxserve.stream.sharing.CoreSharing._waits`): a job of no cost would never wait."""
        cost, _, load = self.budget()
        if cost is None:
            return 0.0
        cfg = self.config
        return self.job_cost(start_window_s(cfg.first_window_s, cfg.max_window_s, cost, load), starts_segment=True)

    def job_cost(self, window_s: float | None, starts_segment: bool) -> float:
        """The expected seconds of a job decoding a window of ``window_s`` (``None``: unknown), with the
        margin windows are planned with; a segment's first job also runs its front (about one more
        window's fixed part). 0 while nothing is learned."""
        cost, _, _ = self.budget()
        if cost is None or window_s is None:
            return 0.0
        a, b = cost
        return MARGIN * ((front_s(cost) if starts_segment else 0.0) + a + b * window_s)
