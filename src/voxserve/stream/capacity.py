"""How much of this machine one real-time stream takes, from what its windows cost here.

A stream whose listener plays in real time needs one second of audio per second. Its engine decodes that
audio in windows, each costing ``a + b * n`` seconds at the thread count it runs with
(:class:`voxserve.engines.windowing.WindowCost`, learned at start and from every window since). Under load a
stream keeps ahead of playback with windows up to the session's largest paced window, so one real-time
stream keeps ``threads * (b + a / window)`` cores busy. Its *share* is that over the cores the pool has.

The admission controller adds the shares of the streams it admits and refuses one that would take the
total past the limit; the sum is the load exported to Prometheus and read by autoscalers.

That share is what the decoder windows cost at their largest size, as fitted at start. A real stream
also pays for its text front, its smaller first windows, work redone after a preemption, and the time
other work on the machine (the event loop's encoding and HTTP, other processes) takes from its cores;
and the fit learned at start can be off by a noisy moment. :class:`CoreMeter` measures the difference
on the streams themselves and scales every share by it. Before its first sample, :func:`ramp_factor` (what
a stream's first job, its text's front and first window, costs per audio second against its largest
window) prices every stream: the first ones start together as often as not, and a lone stream's own
audio brings the first sample within its first few core-seconds.

:class:`Pricing` puts these together for the runtime: each engine's learned window costs at the pool's
thread levels, the meter, and the audio streams deliver.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from voxserve.stream.window_budget import front_s

if TYPE_CHECKING:
    from voxserve.engines.windowing import WindowCost

_WEIGHT = 0.5  # of each new sample in the meter's factor: the last few samples count, older ones fade


@dataclass(frozen=True)
class StreamCost:
    """A learned window cost (``a`` per window, ``b`` per audio second) at ``threads`` threads."""

    a: float
    b: float
    threads: int

    def cores_per_stream(self, window_s: float, front: float = 0.0) -> float:
        """Cores a real-time stream keeps busy when it decodes windows of ``window_s`` audio seconds, each
        after ``front`` seconds of other work (a segment's front before its first window)."""
        return self.threads * (self.b + (self.a + front) / max(window_s, 1e-3))


def stream_share(cost: StreamCost, window_s: float, cores: int, front: float = 0.0) -> float:
    """The fraction of ``cores`` one real-time stream takes (may exceed 1 on a machine too slow for it);
    ``front``: see :meth:`StreamCost.cores_per_stream`."""
    return cost.cores_per_stream(window_s, front) / max(cores, 1)


def cheapest_share(costs: Iterable[StreamCost], window_s: float, cores: int) -> float | None:
    """The share at the cheapest thread level learned (None when none is).

    Each level's cost is refreshed only by windows decoded at it. A level whose cost was learned in a
    busy moment and then went unused (a lone stream runs at the widest level) must not hold admission
    below what the levels in use show the machine can do; the cheapest level is also the one the pool
    gives streams under load."""
    return min((stream_share(cost, window_s, cores) for cost in costs), default=None)


def ramp_factor(costs: Iterable[StreamCost], first_s: float, largest_s: float, cores: int) -> float:
    """How much more a stream's first job costs per audio second than its largest window, at the cheapest
    thread level learned (1 when none is). The job runs the text's front
    (:func:`~voxserve.stream.window_budget.front_s`, as the window planner prices it) and then a first
    window, which is small and decodes its context for less audio: a burst of new streams runs these
    jobs all at once, before any stream has been measured."""
    costs = list(costs)
    largest = cheapest_share(costs, largest_s, cores)
    first = min((stream_share(c, first_s, cores, front_s((c.a, c.b))) for c in costs), default=None)
    return first / largest if first is not None and largest else 1.0


class CoreMeter:
    """How many core-seconds the streams really hold per core-second their shares book.

    ``held()`` counts the core-seconds the worker pool's jobs have held so far (wall time times the
    threads each ran with: a core held by a job is lost to the others however busy it keeps it, and
    whatever else runs on the machine shows up as longer jobs). :meth:`delivered` is told the
    core-seconds booked for each piece of audio a stream delivers (audio seconds times the cores per
    stream of its largest windows at the thread level its jobs run at). Every ``sample_core_s`` of booked
    core-seconds, the ratio of held to booked over that span is one sample; :attr:`factor` is 1 until the
    first sample, then that sample, then a moving mean of the samples. Thread-safe.
    """

    def __init__(self, held: Callable[[], float], sample_core_s: float) -> None:
        if sample_core_s <= 0:
            raise ValueError("sample_core_s must be positive")
        self._held = held
        self._sample_core_s = sample_core_s
        self._lock = threading.Lock()
        self._start: float | None = None  # held() when the span began (None: no span open)
        self._booked = 0.0
        self.factor = 1.0
        self.samples = 0

    def delivered(self, booked_core_s: float) -> None:
        """A stream delivered audio its share booked at ``booked_core_s`` core-seconds."""
        if booked_core_s <= 0:
            return
        with self._lock:
            held = self._held()
            if self._start is None:  # a span opens with this piece: its own work counts as booked
                self._start = held - booked_core_s
            self._booked += booked_core_s
            if self._booked < self._sample_core_s:
                return
            ratio = (held - self._start) / self._booked
            self.factor = ratio if not self.samples else (1 - _WEIGHT) * self.factor + _WEIGHT * ratio
            self.samples += 1
            self._start, self._booked = None, 0.0


class Pricing:
    """What one real-time stream of each engine takes of this machine now, as admission books it.

    ``window_cost(engine)`` is the engine's learned window fit (None: none learned, or no such engine),
    read at each of ``levels`` (thread counts; None: the sessions' own, ``cores`` threads). Streams are
    sized by windows of ``largest_s`` under load and start with one of ``first_s``. ``threads_now()``
    is the thread level the pool gives a stream's jobs now (None: every core). The :attr:`meter` counts
    the core-seconds the pool's jobs hold (``held()``) against what the streams' shares book.
    """

    def __init__(
        self,
        window_cost: Callable[[str], WindowCost | None],
        levels: tuple[int | None, ...],
        cores: int,
        windows_s: tuple[float, float],
        held: Callable[[], float],
        threads_now: Callable[[], int | None],
        sample_core_s: float,
    ) -> None:
        self._window_cost, self._levels, self._cores = window_cost, levels, cores
        self._first_s, self._largest_s = windows_s
        self._threads_now = threads_now
        self.meter = CoreMeter(held, sample_core_s)

    def costs(self, engine: str) -> list[StreamCost]:
        """The window costs ``engine`` learned at each thread level."""
        learned = self._window_cost(engine)
        if learned is None:
            return []
        return [
            StreamCost(fit[0], fit[1], level or self._cores)
            for level in self._levels
            if (fit := learned.fit(level)) is not None
        ]

    def window_share(self, engine: str) -> float | None:
        """The fraction of the cores one real-time stream of ``engine`` keeps busy by its window costs
        (:func:`cheapest_share`); None while nothing is learned."""
        return cheapest_share(self.costs(engine), self._largest_s, self._cores)

    def stream_share(self, engine: str) -> float | None:
        """:meth:`window_share` times what streams here really hold per core-second that books (the
        meter's factor); None while nothing is learned.

        Until the meter's first sample, a stream is booked at what its first job (its text's front and
        first window) costs per audio second (:func:`ramp_factor`): streams that start together all run
        their dearest jobs at once, and nothing has measured them yet. The first stream's own audio
        gives the meter its sample (:meth:`delivered`), so the premium lasts until a few core-seconds of
        audio have been made."""
        costs = self.costs(engine)
        share = cheapest_share(costs, self._largest_s, self._cores)
        if share is None:
            return None
        if self.meter.samples:
            return share * self.meter.factor
        return share * ramp_factor(costs, self._first_s, self._largest_s, self._cores)

    def delivered(self, engine: str, audio_s: float, threads: int | None = None) -> None:
        """A stream of ``engine`` delivered ``audio_s`` of audio: the core-seconds its largest windows
        would take at the thread level its jobs ran at (``threads``; None: the one the pool gives a
        stream's jobs now), to the meter. Fewer streams than cores decode wider than the one thread each
        that admission books under load; booked at their own level, their jobs still tell the meter what
        streams cost beyond their windows' fit, so a lone stream teaches it as well as a crowd. A stream
        well ahead decodes on fewer threads than its share (:meth:`~voxserve.stream.sharing.CoreSharing._enough`),
        and is booked at those."""
        level = threads or self._threads_now() or self._cores
        cost = next((c for c in self.costs(engine) if c.threads == level), None)
        if cost is not None:
            self.meter.delivered(audio_s * cost.cores_per_stream(self._largest_s))
