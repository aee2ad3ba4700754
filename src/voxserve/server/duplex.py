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

from voxserve.errors import InputTooLarge, InvalidInput
from voxserve.server.ratelimit import TokenBuckets
from voxserve.server.service import EncodedChunk, SpeechRequest, SpeechService, Utterance, UtteranceSummary


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
    """One connection's state. Feed :meth:`handle`, read :meth:`events`, always :meth:`aclose`."""

    def __init__(self, service: SpeechService, transport: str, client: str = "") -> None:
        self._service = service
        self._transport = transport
        self._client = client
        self._session_id = uuid.uuid4().hex[:16]
        self._request: SpeechRequest | None = None
        self._current: Utterance | None = None
        self._pending: asyncio.Queue[Utterance | object] = asyncio.Queue()
        self._events: asyncio.Queue[ServerEvent | object] = asyncio.Queue(maxsize=4)
        self._all: list[Utterance] = []
        self._numbers = itertools.count()
        settings = service.settings
        rate = float(settings.max_fragments_per_second)
        self._fragments = TokenBuckets(capacity=rate, per_second=rate)
        self._pump = asyncio.create_task(self._run_pump())

    async def handle(self, message: ClientMessage) -> None:
        """Apply one client message.

        A refused message (bad option, unknown voice, unparsable) is answered with an error event and
        the connection goes on; oversized input, rate limits and server faults raise, and the transport
        closes the connection with the mapped code.
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
            self._fragments.take("text", "text messages per second")
            if self._current is None:
                if self._request is None:
                    await self._configure(SpeechRequest())
                assert self._request is not None
                self._current = self._service.open(self._request, self._transport, self._client)
                self._all.append(self._current)
                await self._pending.put(self._current)
            self._current.push_text(message.text)
        elif isinstance(message, Flush):
            if self._current is not None:
                self._current.flush()
        elif isinstance(message, Close):
            self._end_utterance()
        elif isinstance(message, Cancel):
            for utterance in self._all:
                if not utterance.finished:
                    utterance.cancel()
            self._current = None

    async def end_input(self) -> None:
        """The client will send nothing more: finish what was asked, then end :meth:`events`."""
        self._end_utterance()
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
        for utterance in self._all:
            if not utterance.finished:
                utterance.cancel()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._pump

    async def _configure(self, request: SpeechRequest) -> None:
        self._end_utterance()
        validated = self._service.validate(request, needs_text=False)
        self._request = replace(validated, text="")
        rate = self._service.output_rate(validated)
        await self._events.put(Ready(self._session_id, rate, validated.format))

    def _end_utterance(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None

    async def _run_pump(self) -> None:
        while True:
            item = await self._pending.get()
            if item is _END:
                await self._events.put(_END)
                return
            assert isinstance(item, Utterance)
            number = next(self._numbers)
            async for chunk in item.chunks():
                await self._events.put(Chunk(chunk))
            await self._events.put(Done(number, item.summary()))
            self._all.remove(item)
