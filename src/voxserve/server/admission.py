"""Admission control by measured capacity: a stream is admitted only if the machine can feed it.

Each stream is booked with its *share*: the fraction of the cores one real-time stream of its engine
keeps busy, from the window costs learned on this machine (:mod:`voxserve.stream.capacity`). The sum of
the booked shares is the server's load. A booking holds what prices its stream, not a number: the load
adds up what each running stream costs by what is learned now. A fresh server's first streams are
priced at their first job's cost until the core meter's first sample; once it has one, they count at
the learned cost, so the first long stream of a new replica does not hold it full to its end.

A new stream is admitted while the load with it stays within ``max_load`` (1.0: every core), so streams
already playing are never starved by one that arrives later.
Shares are what the streams cost on average, and deadlines are missed at the moments demand rises above
it (streams starting together, sentence fronts falling together), so the operator's default leaves a
fifth of the cores for them (:class:`voxserve.settings.Settings`). A stream whose cost is not known yet
(a GPU) is booked at ``max_load / max_streams``, so that ``max_streams`` of them fill the limit.
``max_streams`` stays as the operator's ceiling on the number of streams whatever they cost (the load
reads full at it too), and the first stream is always admitted.

The limit also learns from the streams themselves. The shares say what the cores can compute; whether
the scheduler turns that into audio on time is measured by the server's own underrun count. Each stream
whose listener runs dry lowers the limit by the share of the stream admitted last among those running,
at its first stall so that streams arriving meanwhile do not pile on (never below the stalled stream's
own share). That stream is the one the limit should have refused: a stream must not run dry for streams
that arrived after it. With streams of one engine it is one stream's share, whichever stalled; beside
lighter streams (Piper beside Kokoro) a heavy stream's stall takes one light stream off the limit, not
the heavy one's share, which the light streams' clean ends would take many times as long to give back.
When it stalled at a load above the limit (streams admitted before an earlier stall lowered it: the same
overload), the limit goes only to one stream under that load, so one overload lowers it once, not once
per stalled stream: lowering it by every stream a burst stalls would leave room for one stream at the
end of it. What such a stream did not take off the limit is owed instead. Each stream that ends clean
gives a hundredth of its share back: to the debt while there is one, else to the limit, up to
``max_load``. So a load that stalled is reached again only after about a hundred clean streams per
stream it stalled, however many stalled at once: the limit settles where about one stream in a hundred
stalls (the capacity target of ``voxserve bench``) on this machine, under this traffic. The debt never
exceeds the limit, so one bad minute is paid off within a hundred times the streams the limit admits.

A new stream the worker pool refuses (it waited for thin streams as long as it may) teaches as a stall.
It leaves at once, though, so the next refusal of the same burst meets a load under the limit again:
refusals count as one overload while no stream has been admitted since the limit was last lowered.

A stream that runs dry while no other is running teaches nothing: admitting fewer could not have
spared it (the first stream is always admitted). Such a stall comes from elsewhere (a fresh server's
first request, another process taking the cores), and lowering the limit for it would refuse a second
listener for the next hundred streams.

A stream that does not fit waits in a bounded FIFO queue for at most ``queue_timeout_s`` (that wait counts
against its first audio), or is refused at once with :class:`Overloaded` when the queue is full or
``max_queue`` is 0. Refusals never touch the engines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from voxserve.client.waits import within
from voxserve.errors import Overloaded, ShuttingDown
from voxserve.settings import Settings

log = logging.getLogger("voxserve.server")

_EPS = 1e-9
_RECOVERY = 0.01  # of a clean stream's share given back to the limit: the stall rate it settles at

Price = Callable[[], float | None]  # one stream's share now (None: not known)
Share = float | Price | None  # what a stream is booked with: a share, what prices it, or unknown


@dataclass(frozen=True, eq=False)
class Booking:
    """One admitted (or waiting) stream: what prices it. Compared by identity: two streams of one price
    are two bookings."""

    price: Price


def _price(share: Share) -> Price:
    return share if callable(share) else lambda: share


class Admission:
    def __init__(
        self,
        max_streams: int,
        max_queue: int,
        queue_timeout_s: float = 30.0,
        on_change: Callable[[int, int, float], None] | None = None,
        max_load: float = 1.0,
    ) -> None:
        self.max_streams = max_streams
        self.max_queue = max_queue
        self.queue_timeout_s = queue_timeout_s
        self.max_load = max_load
        self._limit = max_load  # learned from stalls, within (one stream, max_load]
        self._debt = 0.0  # shares stalled streams did not take off the limit, paid back before it rises
        # the running streams, in the order they were admitted, each with how often the limit had been
        # lowered by then (see :meth:`observe`)
        self._bookings: dict[Booking, int] = {}
        self._lowered = 0  # times the limit was lowered
        self._waiters: deque[tuple[asyncio.Future[None], Booking]] = deque()
        self._draining = False
        self._idle = asyncio.Event()
        self._idle.set()
        self._on_change = on_change
        self._changed()  # the gauges start at the limit, not at nothing

    @classmethod
    def from_settings(cls, settings: Settings, on_change: Callable[[int, int, float], None] | None = None) -> Admission:
        """Admission as the operator's settings configure it (the server's, and a simulated one's)."""
        return cls(
            settings.max_streams,
            settings.max_queue,
            queue_timeout_s=settings.queue_timeout_s,
            on_change=on_change,
            max_load=settings.max_load,
        )

    @property
    def active(self) -> int:
        return len(self._bookings)

    @property
    def queued(self) -> int:
        return len(self._waiters)

    @property
    def load(self) -> float:
        """The booked shares of the streams running now against the learned limit, or the streams against
        ``max_streams`` when that is fuller: 1.0 is full either way (what autoscalers and balancers read)."""
        return max(self._booked() / self._limit, self.active / self.max_streams)

    def _booked(self) -> float:
        """The running streams' shares, priced now (each distinct price asked once)."""
        prices: dict[Price, float] = {}
        for booking in self._bookings:
            if booking.price not in prices:
                prices[booking.price] = self.share(booking.price())
        return sum(prices[booking.price] for booking in self._bookings)

    @property
    def limit(self) -> float:
        """The booked shares admitted at most now (learned from stalls, at most ``max_load``)."""
        return self._limit

    def observe(self, share: float | None, stalled: bool, refused: bool = False) -> None:
        """A stream of ``share`` stalled, or ended clean: move the limit (see above). A stream the worker
        pool ``refused`` before its first audio (``stalled`` too) teaches as a stall: the
        streams playing needed the cores admission booked it on. But such a stream leaves at once, so
        the load above the limit that marks a burst's later stalls as one overload is gone by the next
        refusal: the refusals of one burst would each lower the limit, down to the few streams the pool
        started. So a refusal while no stream has been admitted since the limit was last lowered is
        owed, as one of the same overload."""
        booked = self.share(share)
        if stalled and self.active <= 1:
            return  # it ran dry with the cores to itself: no admission could have spared it
        if stalled:
            newest = next(reversed(self._bookings))  # the stream admitted last
            last = self.share(newest.price())
            lowered = max(booked, min(self._limit, max(self._booked(), self._limit) - last))
            if refused and self._bookings[newest] < self._lowered:
                lowered = self._limit  # nothing admitted since the last lowering: the same overload
            self._debt = min(self._debt + last - max(0.0, self._limit - lowered), lowered)
            if lowered < self._limit:  # a burst's later stalls are owed, not logged again
                self._lowered += 1
                log.warning(
                    "%s beside %d other streams: admission limit %.3f -> %.3f of the cores",
                    "the pool refused a new stream" if refused else "a listener ran dry",
                    self.active - 1,
                    self._limit,
                    lowered,
                )
            self._limit = lowered
        else:
            gain = _RECOVERY * booked
            paid = min(self._debt, gain)
            self._debt -= paid
            self._limit = min(self.max_load, self._limit + gain - paid)
        self._changed()

    @property
    def draining(self) -> bool:
        return self._draining

    def share(self, share: float | None) -> float:
        """The share a stream is booked with: its learned one, else an equal part of ``max_load`` among
        ``max_streams``."""
        return share if share is not None and share > 0 else self.max_load / self.max_streams

    def fits(self, share: Share = None) -> bool:
        """Whether a stream of ``share`` could start now without taking the booked shares past the limit."""
        if self.active >= self.max_streams:
            return False
        return not self._bookings or self._booked() + self.share(_price(share)()) <= self._limit + _EPS

    def start_draining(self) -> None:
        """Refuse new streams from now on; waiting requests are refused too."""
        self._draining = True
        while self._waiters:
            waiter, _ = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(ShuttingDown("server is shutting down", retry_after_s=5.0))
        self._changed()

    async def wait_idle(self) -> None:
        await self._idle.wait()

    async def acquire(self, share: Share = None) -> Booking:
        """Book a stream of ``share`` (see :meth:`share`; a callable prices it each time the load is
        added up); returns what :meth:`release` must be given."""
        booking = Booking(_price(share))
        if self._draining:
            raise ShuttingDown("server is shutting down", retry_after_s=5.0)
        if not self._waiters and self.fits(booking.price):
            self._take(booking)
            return booking
        if len(self._waiters) >= self.max_queue:
            raise Overloaded(
                f"server at capacity ({self.active} streams, load {self.load:.2f}, {len(self._waiters)} queued); "
                "retry shortly or use another replica",
                retry_after_s=1.0,
            )
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (waiter, booking)
        self._waiters.append(entry)
        self._changed()
        try:
            await within(asyncio.shield(waiter), self.queue_timeout_s)
        except BaseException as exc:
            if entry in self._waiters:
                self._waiters.remove(entry)
                self._changed()
            elif waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.release(booking)  # admitted just as we gave up: pass the room on
            if isinstance(exc, TimeoutError):
                raise Overloaded("timed out waiting for capacity; retry shortly", retry_after_s=1.0) from None
            raise
        return booking

    def release(self, booking: Booking) -> None:
        """End a stream's ``booking`` (what :meth:`acquire` returned) and admit waiters that now fit."""
        self._bookings.pop(booking, None)
        self._admit_waiters()
        if not self._bookings:
            self._idle.set()
        self._changed()

    @contextlib.asynccontextmanager
    async def slot(self, share: Share = None) -> AsyncIterator[Booking]:
        booking = await self.acquire(share)
        try:
            yield booking
        finally:
            self.release(booking)

    def _admit_waiters(self) -> None:
        """Admit waiting streams in order while the first one fits (FIFO: no one is overtaken)."""
        while self._waiters:
            waiter, booking = self._waiters[0]
            if waiter.done():
                self._waiters.popleft()
                continue
            if not self.fits(booking.price):
                return
            self._waiters.popleft()
            self._take(booking)
            waiter.set_result(None)

    def _take(self, booking: Booking) -> None:
        self._bookings[booking] = self._lowered
        self._idle.clear()
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self.active, len(self._waiters), self._limit)
