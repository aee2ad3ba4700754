"""The duplex streaming protocol shared by the WebSocket and gRPC bidirectional transports.

Clients send config / text / flush / close / cancel / ping; the server sends ready, chunk,
done, error and pong events. Text of an utterance that starts while an earlier one still
plays is synthesized at once and its audio queued behind, so playback has no gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

from voxserve.errors import EngineFailure, InputTooLarge, InvalidInput
from voxserve.server.ratelimit import TokenBuckets
from voxserve.server.service import EncodedChunk, SpeechRequest, SpeechService, UtteranceSummary
from voxserve.server.turn import Turn


# --- client → server ------------------------------------------------------------------
@dataclass(frozen=True)
class Config:
    request: SpeechRequest


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Flush:
    pass


@dataclass(frozen=True)
class Close:
    pass


@dataclass(frozen=True)
class Cancel:
    pass


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Invalid:
    """A message the transport could not parse; answered with an error event."""

    error: InvalidInput


ClientMessage = Config | Text | Flush | Close | Cancel | Ping | Invalid


# --- server → client ------------------------------------------------------------------
@dataclass(frozen=True)
class Ready:
    session_id: str
    sample_rate: int
    format: str


@dataclass(frozen=True)
class Chunk:
    chunk: EncodedChunk


@dataclass(frozen=True)
class Done:
    utterance: int
    summary: UtteranceSummary


@dataclass(frozen=True)
class Error:
    code: str
    message: str


@dataclass(frozen=True)
class Pong:
    pass


ServerEvent = Ready | Chunk | Done | Error | Pong

_END = object()


class DuplexStream:
    """One connection's state. Feed :meth:`handle`, read :meth:`events`, always :meth:`aclose`.

    Utterances are spoken one after another. Each takes a stream slot (admission) only while it is
    synthesized, so an idle connection holds none; the next one starts when the one before has made
    all its audio, which is still ``lookahead_s`` ahead of playback, so the two join without a gap.
    Every ``close`` or ``cancel`` is answered by one ``done`` per utterance it ends (an empty one when
    nothing was open). An utterance that fails (nothing speakable, an engine error) gets an ``error``
    and then its ``done``; the connection goes on.
    """

    def __init__(self, service: SpeechService, transport: str, client: str = "") -> None:
        self._service = service
        self._transport = transport
        self._client = client
        self._session_id = uuid.uuid4().hex[:16]
        self._request: SpeechRequest | None = None
        self._refused: InvalidInput | None = None  # why the last config was refused, until a good one
        self._current: Turn | None = None
        self._pending: asyncio.Queue[Turn | object] = asyncio.Queue()
        self._events: asyncio.Queue[ServerEvent | object] = asyncio.Queue(maxsize=4)
        self._all: list[Turn] = []
        self._numbers = itertools.count()
        rate = float(service.settings.max_fragments_per_second)
        self._fragments = TokenBuckets(capacity=rate, per_second=rate)
        self._pump = asyncio.create_task(self._run_pump())

    async def handle(self, message: ClientMessage) -> None:
        """Apply one client message.

        A refused message (bad option, unknown voice, unparsable) is answered with an error event and
        the connection goes on; oversized input and server faults raise, and the transport closes the
        connection with the mapped code. Text sent faster than ``max_fragments_per_second`` is read
        more slowly (the client feels backpressure), not refused.
        """
        try:
            await self._apply(message)
        except InputTooLarge:
            raise
        except InvalidInput as exc:
            await self._events.put(Error(exc.code, exc.message))

    async def _apply(self, message: ClientMessage) -> None:
        if isinstance(message, Invalid):
            raise message.error
        if isinstance(message, Ping):
            await self._events.put(Pong())
        elif isinstance(message, Config):
            await self._configure(message.request)
        elif isinstance(message, Text):
            await asyncio.sleep(self._fragments.wait("text"))
            if self._refused is not None:
                raise InvalidInput(f"text ignored: the last config was refused ({self._refused.message}); send another")
            (await self._turn()).push_text(message.text)
        elif isinstance(message, Flush):
            if self._current is not None:
                self._current.flush()
        elif isinstance(message, Close):
            (await self._turn()).close()
            self._current = None
        elif isinstance(message, Cancel):
            live = [turn for turn in self._all if not turn.done]
            for turn in live:
                turn.cancel()
            self._current = None
            if not live:  # nothing to stop: still answered, so a client waiting for done goes on
                self._enqueue(Turn(self._request or SpeechRequest(), 0, cancelled=True))

    async def end_input(self) -> None:
        """The client will send nothing more: finish what was asked, then end :meth:`events`."""
        if self._current is not None:
            self._current.close()
            self._current = None
        await self._pending.put(_END)

    async def events(self, watch: asyncio.Task[None] | None = None) -> AsyncIterator[ServerEvent]:
        """Server events in order. If ``watch`` (e.g. the task reading client messages) fails, re-raise."""
        while True:
            getter = asyncio.ensure_future(self._events.get())
            waiting: set[asyncio.Future[object]] = {getter, self._pump}  # type: ignore[arg-type]
            if watch is not None:
                waiting.add(watch)  # type: ignore[arg-type]
            try:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not getter.done():
                    getter.cancel()
            if getter not in done:
                if watch is not None and watch in done:
                    watch.result()  # raises what stopped the reader
                    watch = None
                    continue
                if self._events.empty():
                    self._pump.result()  # re-raise what stopped the pump
                    return
                continue
            event = getter.result()
            if event is _END:
                return
            yield event  # type: ignore[misc]

    async def aclose(self) -> None:
        """Cancel everything still running (client gone or connection failed)."""
        for turn in self._all:
            if not turn.done:
                turn.cancel()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._pump

    async def _configure(self, request: SpeechRequest) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None
        try:
            validated = self._service.validate(request, needs_text=False)
        except InvalidInput as exc:
            self._refused = exc
            raise
        self._refused = None
        self._request = replace(validated, text="")
        await self._events.put(Ready(self._session_id, self._service.output_rate(validated), validated.format))

    async def _turn(self) -> Turn:
        """The utterance text goes to; a new one, with the current config, when none is open."""
        if self._current is None:
            if self._request is None:
                await self._configure(SpeechRequest())
            assert self._request is not None
            self._current = Turn(self._request, self._service.settings.max_input_chars)
            self._enqueue(self._current)
        return self._current

    def _enqueue(self, turn: Turn) -> None:
        self._all.append(turn)
        self._pending.put_nowait(turn)

    async def _run_pump(self) -> None:
        while True:
            item = await self._pending.get()
            if item is _END:
                await self._events.put(_END)
                return
            assert isinstance(item, Turn)
            number = next(self._numbers)
            try:
                await self._speak(item)
            except (InvalidInput, EngineFailure) as exc:  # this utterance's fault, not the connection's
                await self._events.put(Error(exc.code, exc.message))
            finally:
                item.done = True
                self._all.remove(item)
            await self._events.put(Done(number, item.summary()))

    async def _speak(self, turn: Turn) -> None:
        """Synthesize one utterance while holding a stream slot; its chunks go to the events."""
        await turn.wait_for_text()
        if turn.cancelled or not turn.has_text:
            return
        admission = self._service.admission
        booked = await admission.acquire(self._service.share(turn.request))  # Overloaded: full or draining
        try:
            if turn.cancelled:
                return
            utterance = self._service.open(turn.request, self._transport, self._client)
            turn.start(utterance)
            async for chunk in utterance.chunks():
                await self._events.put(Chunk(chunk))
        finally:
            admission.release(booked)
