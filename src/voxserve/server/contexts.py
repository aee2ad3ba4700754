"""Protocol 2 of the duplex transports: several independent contexts on one connection.

A connection speaks protocol 2 when its first message is a ``config`` with ``protocol: 2``
(:func:`open_stream` picks the class; anything else keeps protocol 1, :class:`.duplex.DuplexStream`).
Every ``text``/``flush``/``close``/``cancel`` then names a ``context_id``; the first ``text`` (or a
``config``) naming a new id opens that context. Contexts run side by side: a new one is synthesized at
once, even while another still plays, each holding its own stream slot while it makes audio. Each is
flushed, closed or cancelled on its own and ends with its own ``done``; every event names its context.
Audio of a cancelled context still waiting to be sent is dropped, so the client hears no more of it.

Bounds: at most ``max_contexts`` open at once (``too_many_contexts`` past it), and an open context that
gets no message and makes no audio for ``context_idle_s`` is closed by the server (``context_expired``,
then its remaining text is spoken and its ``done`` follows). An id that has ended cannot be reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

from voxserve.errors import (
    ContextExpired,
    InputTooLarge,
    InvalidInput,
    TooManyContexts,
    UnknownContext,
    VoxError,
)
from voxserve.policy import SpeechRequest
from voxserve.server import duplex as dx
from voxserve.server.ratelimit import TokenBuckets
from voxserve.server.service import SpeechService
from voxserve.server.turn import Turn
from voxserve.server.utterance import EncodedChunk

_REMEMBERED = 1024  # ended context ids kept, so a late message to one is answered clearly
_END = object()


def open_stream(
    service: SpeechService, transport: str, client: str, first: dx.ClientMessage
) -> dx.DuplexStream | ContextStream:
    """The protocol the connection's first message asks for (``config`` with ``protocol``; default 1)."""
    if isinstance(first, dx.Config) and first.protocol == 2:
        return ContextStream(service, transport, client)
    return dx.DuplexStream(service, transport, client)


@dataclass(eq=False)
class _Context:
    id: str
    number: int
    turn: Turn
    active: float = field(default_factory=time.monotonic)  # the last message or audio sent
    closed: bool = False
    dropped: bool = False  # cancelled: queued audio is not sent
    sent: int = 0
    sent_s: float = 0.0
    task: asyncio.Task[None] | None = None


class ContextStream:
    """One protocol-2 connection. Same interface as :class:`.duplex.DuplexStream`: feed :meth:`handle`,
    read :meth:`events`, call :meth:`end_input` when the client half-closes, always :meth:`aclose`."""

    def __init__(self, service: SpeechService, transport: str, client: str = "") -> None:
        self._service = service
        self._transport = transport
        self._client = client
        self._session_id = uuid.uuid4().hex[:16]
        self._request: SpeechRequest | None = None
        self._live: dict[str, _Context] = {}
        self._ended: OrderedDict[str, _Context] = OrderedDict()
        self._refused: OrderedDict[str | None, InvalidInput] = OrderedDict()  # configs refused, by context
        self._events: asyncio.Queue[tuple[_Context | None, object]] = asyncio.Queue(maxsize=8)
        self._numbers = itertools.count()
        rate = float(service.settings.max_fragments_per_second)
        self._fragments = TokenBuckets(capacity=rate, per_second=rate)
        self._reaper = asyncio.create_task(self._reap())
        self._finisher: asyncio.Task[None] | None = None

    async def handle(self, message: dx.ClientMessage) -> None:
        """Apply one client message; a refused one is answered with an error event naming its context.
        Oversized input raises (the transport closes the connection), as on protocol 1."""
        try:
            await self._apply(message)
        except InputTooLarge:
            raise
        except InvalidInput as exc:
            context = getattr(message, "context_id", None)
            await self._events.put((None, dx.Error(exc.code, exc.message, context)))

    async def _apply(self, message: dx.ClientMessage) -> None:
        if isinstance(message, dx.Invalid):
            if message.config:
                self._refuse(message.context_id, message.error)
            raise message.error
        if isinstance(message, dx.Ping):
            await self._events.put((None, dx.Pong()))
        elif isinstance(message, dx.Config):
            await self._configure(message)
        elif isinstance(message, dx.Text):
            await asyncio.sleep(self._fragments.wait("text"))
            ctx = self._live.get(_need_id(message)) or await self._open(_need_id(message), None)
            ctx.active = time.monotonic()
            self._service.policy.check_text(message.text, ctx.turn.request)  # refused, not held
            ctx.turn.push_text(message.text)
        elif isinstance(message, dx.Flush):
            ctx = self._find(_need_id(message))
            ctx.active = time.monotonic()
            ctx.turn.flush()
        elif isinstance(message, dx.Close):
            ctx = self._find(_need_id(message))
            ctx.closed = True
            ctx.turn.close()
        elif isinstance(message, dx.Cancel):
            self._cancel(message.context_id)

    def _refuse(self, context_id: str | None, exc: InvalidInput) -> None:
        """A config for ``context_id`` (None: the connection's defaults) was refused: text that would open
        that context (any context, for the defaults) is refused until a config for it is accepted."""
        self._refused[context_id] = exc
        self._refused.move_to_end(context_id)
        while len(self._refused) > _REMEMBERED:
            self._refused.popitem(last=False)

    async def _configure(self, message: dx.Config) -> None:
        try:
            dx.check_protocol(message.protocol, 2)
            validated = self._service.validate(message.request, needs_text=False)
        except InvalidInput as exc:
            self._refuse(message.context_id, exc)
            raise
        request = replace(validated, text="")
        self._refused.pop(message.context_id, None)
        if message.context_id is None:
            self._request = request
        elif message.context_id in self._live:
            raise InvalidInput(f"context {message.context_id!r} is open; its config was fixed when it started")
        else:
            await self._open(message.context_id, request)
        rate = self._service.output_rate(validated)
        await self._events.put((None, dx.Ready(self._session_id, rate, validated.format, message.context_id)))

    async def _open(self, context_id: str, request: SpeechRequest | None) -> _Context:
        if context_id in self._ended:
            raise UnknownContext(f"context {context_id!r} has ended; open a new one with a new context_id")
        limit = self._service.settings.max_contexts
        if len(self._live) >= limit:
            raise TooManyContexts(
                f"{limit} contexts are open on this connection (the limit); close or cancel one first"
            )
        if request is None:
            refused = self._refused.get(context_id) or self._refused.get(None)
            if refused is not None:
                raise dx.ignored_text(refused, context_id)
            if self._request is None:
                await self._configure(dx.Config(SpeechRequest()))
            request = self._request
        assert request is not None
        ctx = _Context(context_id, next(self._numbers), Turn(request, self._service.settings.max_input_chars))
        self._live[context_id] = ctx
        ctx.task = asyncio.create_task(self._run(ctx))
        return ctx

    def _find(self, context_id: str) -> _Context:
        ctx = self._live.get(context_id)
        if ctx is not None:
            return ctx
        state = "has ended" if context_id in self._ended else "was never opened (send text to open it)"
        raise UnknownContext(f"context {context_id!r} {state}")

    def _cancel(self, context_id: str | None) -> None:
        """Cancel one context (or every one, without an id). A context that has just ended is let be,
        but its audio not yet sent is dropped: the client asked to hear no more of it."""
        if context_id is None:
            targets = list(self._live.values())
        else:
            ctx = self._live.get(context_id) or self._ended.get(context_id)
            if ctx is None:
                raise UnknownContext(f"context {context_id!r} was never opened")
            targets = [ctx]
        for ctx in targets:
            ctx.dropped = True
            ctx.closed = True
            if not ctx.turn.done:
                ctx.turn.cancel()

    async def _run(self, ctx: _Context) -> None:
        async def emit(chunk: EncodedChunk) -> None:
            await self._events.put((ctx, dx.Chunk(chunk, ctx.id)))

        try:
            await dx.speak(self._service, ctx.turn, self._transport, self._client, emit)
        except VoxError as exc:  # this context's fault or the server's state: the connection goes on
            await self._events.put((ctx, dx.Error(exc.code, exc.message, ctx.id, exc.retry_after_s)))
        except Exception as exc:  # a server fault: events() raises it and the transport closes
            await self._events.put((ctx, exc))
            return
        finally:
            ctx.turn.done = True
            self._live.pop(ctx.id, None)
            self._ended[ctx.id] = ctx
            while len(self._ended) > _REMEMBERED:
                self._ended.popitem(last=False)
        await self._events.put((ctx, dx.Done(ctx.number, ctx.turn.summary(), ctx.id)))

    async def _reap(self) -> None:
        """Close open contexts idle for ``context_idle_s`` (no message, no audio sent)."""
        idle = self._service.settings.context_idle_s
        while True:
            await asyncio.sleep(min(1.0, idle / 4))
            now = time.monotonic()
            for ctx in list(self._live.values()):
                if not ctx.closed and now - ctx.active > idle:
                    ctx.closed = True
                    ctx.turn.close()
                    message = f"context {ctx.id!r} got no message for {idle:g} s; closed (its text is still spoken)"
                    await self._events.put((ctx, dx.Error(ContextExpired.code, message, ctx.id)))

    async def end_input(self) -> None:
        """The client will send nothing more: finish every open context, then end :meth:`events`."""
        for ctx in self._live.values():
            if not ctx.closed:
                ctx.closed = True
                ctx.turn.close()
        tasks = [ctx.task for ctx in self._live.values() if ctx.task is not None]

        async def finish() -> None:
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._events.put((None, _END))

        self._finisher = asyncio.create_task(finish())

    async def events(self, watch: asyncio.Task[None] | None = None) -> AsyncIterator[dx.ServerEvent]:
        """Server events in order. If ``watch`` (e.g. the task reading client messages) fails, re-raise."""
        while True:
            got, item, _ = await dx.next_item(self._events, watch)
            if not got:
                assert watch is not None
                watch.result()  # raises what stopped the reader
                watch = None
                continue
            ctx, event = item
            if event is _END:
                return
            if isinstance(event, BaseException):
                raise event
            if ctx is not None and isinstance(event, dx.Chunk):
                if ctx.dropped:
                    continue
                ctx.sent += 1
                ctx.sent_s += event.chunk.duration_s
                ctx.active = time.monotonic()
            elif ctx is not None and isinstance(event, dx.Done):
                summary = replace(
                    event.summary, chunks=ctx.sent, audio_s=ctx.sent_s, cancelled=event.summary.cancelled or ctx.dropped
                )
                event = replace(event, summary=summary)
            assert isinstance(event, dx.Ready | dx.Chunk | dx.Done | dx.Error | dx.Pong)
            yield event

    @property
    def quiet(self) -> bool:
        """No context speaking and no event waiting to be sent (see ``ServerState.drain``)."""
        speaking = any(ctx.turn.utterance is not None for ctx in self._live.values())
        return not speaking and self._events.empty()

    async def aclose(self) -> None:
        """Cancel everything still running (client gone or connection failed)."""
        tasks: list[asyncio.Task[None]] = [self._reaper]
        for ctx in self._live.values():
            if not ctx.turn.done:
                ctx.turn.cancel()
            if ctx.task is not None:
                tasks.append(ctx.task)
        if self._finisher is not None:
            tasks.append(self._finisher)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _need_id(message: dx.Text | dx.Flush | dx.Close) -> str:
    if message.context_id is None:
        raise InvalidInput("protocol 2: text, flush and close messages need a 'context_id'")
    return message.context_id
