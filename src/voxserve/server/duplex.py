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
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from voxserve.errors import EngineFailure, InputTooLarge, InvalidInput, TooManyContexts, VoxError, error_body
from voxserve.policy import SpeechRequest
from voxserve.server.ratelimit import TokenBuckets
from voxserve.server.service import SpeechService
from voxserve.server.turn import Turn
from voxserve.server.utterance import EncodedChunk, UtteranceSummary


# --- client → server ------------------------------------------------------------------
# ``context_id`` is read by protocol 2 only (:mod:`.contexts`); protocol 1 ignores it.
@dataclass(frozen=True)
class Config:
    request: SpeechRequest
    protocol: int | None = None  # chosen by the connection's first message; None: 1
    context_id: str | None = None


@dataclass(frozen=True)
class Text:
    text: str
    context_id: str | None = None


@dataclass(frozen=True)
class Flush:
    context_id: str | None = None


@dataclass(frozen=True)
class Close:
    context_id: str | None = None


@dataclass(frozen=True)
class Cancel:
    context_id: str | None = None


@dataclass(frozen=True)
class Ping:
    pass


@dataclass(frozen=True)
class Invalid:
    """A message the transport could not parse; answered with an error event. ``config``: it was a
    config, so text is refused until one is accepted, as after a config with a value refused."""

    error: InvalidInput
    context_id: str | None = None
    config: bool = False


ClientMessage = Config | Text | Flush | Close | Cancel | Ping | Invalid

PROTOCOLS = (1, 2)


def check_protocol(asked: int | None, speaking: int) -> None:
    """Refuse a config naming a protocol other than ``speaking``, the one the connection's first message chose."""
    if asked is not None and asked not in PROTOCOLS:
        raise InvalidInput(f"protocol must be one of {PROTOCOLS}, got {asked}")
    if asked not in (None, speaking):
        raise InvalidInput(f"the protocol is chosen by a connection's first message; this one speaks {speaking}")


def ignored_text(refused: InvalidInput, context_id: str | None = None) -> InvalidInput:
    """Why text is refused after a refused config: it is never spoken with another config."""
    whose = f"context {context_id!r}'s" if context_id is not None else "the"
    return InvalidInput(f"text ignored: {whose} last config was refused ({refused.message}); send another")


# --- server → client ------------------------------------------------------------------
# ``context_id`` is set on protocol 2 connections only.
@dataclass(frozen=True)
class Ready:
    session_id: str
    sample_rate: int
    format: str
    context_id: str | None = None


@dataclass(frozen=True)
class Chunk:
    chunk: EncodedChunk
    context_id: str | None = None


@dataclass(frozen=True)
class Done:
    utterance: int
    summary: UtteranceSummary
    context_id: str | None = None


@dataclass(frozen=True)
class Error:
    code: str
    message: str
    context_id: str | None = None
    retry_after_s: float | None = None  # busy or restarting: when to try again

    @classmethod
    def ending(cls, exc: BaseException) -> Error:
        """The event a duplex transport sends before it ends the connection on ``exc``: the code and
        message of :func:`voxserve.errors.error_body`, and when to try again where the error says."""
        body = error_body(exc)["error"]
        assert isinstance(body, dict)
        retry = exc.retry_after_s if isinstance(exc, VoxError) else None
        return cls(str(body["code"]), str(body["message"]), None, retry)


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
            if message.config:
                self._refused = message.error
            raise message.error
        if isinstance(message, Ping):
            await self._events.put(Pong())
        elif isinstance(message, Config):
            await self._configure(message.request, message.protocol)
        elif isinstance(message, Text):
            await asyncio.sleep(self._fragments.wait("text"))
            if self._refused is not None:
                raise ignored_text(self._refused)
            limit = self._service.settings.max_contexts
            if self._current is None and sum(not turn.done for turn in self._all) >= limit:
                raise TooManyContexts(  # text held for each would otherwise be kept without bound
                    f"{limit} utterances are queued or speaking on this connection (the limit, "
                    "VOXSERVE_MAX_CONTEXTS); wait for a done before sending the next one"
                )
            turn = await self._turn()
            self._service.policy.check_text(message.text, turn.request)  # refused, not held: the turn goes on
            turn.push_text(message.text)
        elif isinstance(message, Flush):
            if self._current is not None:
                self._current.flush()
        elif isinstance(message, Close):
            if self._current is None and self._request is None and self._refused is not None:
                # nothing open, and no accepted config to open an utterance with: its done, and nothing more
                # (configuring the defaults here would speak the next text in a voice never asked for)
                empty = Turn(SpeechRequest(), 0)
                empty.close()
                self._enqueue(empty)
            else:
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
            got, event, finished = await next_item(self._events, self._pump, watch)
            if not got:
                if watch is not None and watch in finished:
                    watch.result()  # raises what stopped the reader
                    watch = None
                    continue
                if self._events.empty():
                    self._pump.result()  # re-raise what stopped the pump
                    return
                continue
            if event is _END:
                return
            yield event

    @property
    def quiet(self) -> bool:
        """No utterance speaking, no event waiting to be sent, and not ending (see ``ServerState.drain``)."""
        speaking = any(turn.utterance is not None for turn in self._all)
        return not speaking and self._events.empty() and not self._pump.done()

    async def aclose(self) -> None:
        """Cancel everything still running (client gone or connection failed)."""
        for turn in self._all:
            if not turn.done:
                turn.cancel()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._pump

    async def _configure(self, request: SpeechRequest, protocol: int | None = None) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None
        try:
            check_protocol(protocol, 1)
            validated = self._service.validate(request, needs_text=False)
        except InvalidInput as exc:
            self._refused = exc
            raise
        self._refused = None
        self._request = replace(validated, text="")
        # in line behind the utterances before it: their chunks carry no format or rate, so a client that
        # switches its decoder at this ready must get it only after their last chunk
        self._pending.put_nowait(Ready(self._session_id, self._service.output_rate(validated), validated.format))

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
            if isinstance(item, Ready):
                await self._events.put(item)
                continue
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
        async def emit(chunk: EncodedChunk) -> None:
            await self._events.put(Chunk(chunk))

        await speak(self._service, turn, self._transport, self._client, emit)


async def next_item(
    queue: asyncio.Queue[Any], *watched: asyncio.Future[Any] | None
) -> tuple[bool, Any, set[asyncio.Future[Any]]]:
    """The next item of ``queue``, unless a ``watched`` task finishes first: (got one, the item, the
    watched tasks that finished)."""
    getter = asyncio.ensure_future(queue.get())
    waiting = {getter, *(task for task in watched if task is not None)}
    try:
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not getter.done():
            getter.cancel()
    if getter in done:
        return True, getter.result(), done - {getter}
    return False, None, done


async def speak(
    service: SpeechService,
    turn: Turn,
    transport: str,
    client: str,
    emit: Callable[[EncodedChunk], Awaitable[None]],
) -> None:
    """Synthesize one utterance while booked with admission (its share of the machine); each chunk goes
    to ``emit``. The booking is made only once the turn has text: an utterance still waiting costs nothing."""
    await turn.wait_for_text()
    if turn.cancelled or not turn.has_text:
        return
    async with service.state.admission.slot(service.price(turn.request)):  # Overloaded (full or draining): raised
        if turn.cancelled:
            return
        utterance = service.open(turn.request, transport, client)
        turn.start(utterance)
        async for chunk in utterance.chunks():
            await emit(chunk)
