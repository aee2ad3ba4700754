"""A LiveKit Agents TTS backed by a voxserve server (extra ``voxserve[livekit]``).

``TTS.stream()`` is real streaming input: each ``push_text`` goes to the server as it comes, over one
protocol-2 WebSocket the TTS keeps open; every LiveKit segment (text up to a ``flush``) is one voxserve
context, so segments and concurrent streams share the socket, and closing a stream cancels only its
context. Audio is raw PCM at ``sample_rate``, which the server resamples to; word timings come as aligned
transcripts (``TTSCapabilities.aligned_transcript``), each word with the punctuation around it as sent.

LiveKit owns the retries: a stream's ``APIConnectOptions`` (``max_retry``, ``timeout``) are the only
ones, and failures come out as its error types, retryable where trying again can help (a lost or refused
connection, a busy or restarting server). A segment with nothing to speak (only punctuation or emoji, as
an LLM may send) is a moment of silence, not an error that would end the agent's session; text the
server stopped waiting for (a context closed after ``VOXSERVE_CONTEXT_IDLE_S`` without text) goes on in a
new context.

    from voxserve.integrations.livekit import TTS
    session = AgentSession(tts=TTS(base_url="http://127.0.0.1:8000", voice="af_heart"), ...)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from livekit.agents import APIConnectionError, APIConnectOptions, APIError, APIStatusError, APITimeoutError, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, TimedString
from livekit.agents.utils import shortuuid

from voxserve.client import AsyncClient, VoxServeError
from voxserve.client.aio import Connection, Context
from voxserve.client.types import SourceWords
from voxserve.errors import status_of

DEFAULT_SAMPLE_RATE = 24000
SILENCE_S = 0.02  # what a segment with nothing to speak gives: LiveKit expects audio for any text


class TTS(tts.TTS):
    """voxserve as a LiveKit TTS. ``voice``: any voxserve voice id or blend; ``sample_rate``: what the
    frames carry (the server resamples); ``api_key``: when the server requires one."""

    def __init__(
        self,
        *,
        base_url: str = "http://127.0.0.1:8000",
        voice: str | None = None,
        speed: float = 1.0,
        lang: str | None = None,
        sample_rate: int = DEFAULT_SAMPLE_RATE,
        api_key: str | None = None,
    ) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=True, aligned_transcript=True),
            sample_rate=sample_rate,
            num_channels=1,
        )
        # no retries of the client's own: LiveKit retries by the stream's APIConnectOptions
        self._client = AsyncClient(base_url, api_key=api_key, retries=0, timeout_s=DEFAULT_API_CONNECT_OPTIONS.timeout)
        self._config = {
            "voice": voice,
            "speed": speed,
            "lang": lang,
            "format": "pcm",
            "sample_rate": sample_rate,
            "word_timings": True,
        }
        self._connection: Connection | None = None
        self._lock = asyncio.Lock()
        self._background: set[asyncio.Task[None]] = set()

    @property
    def model(self) -> str:
        return str(self._config["voice"] or "voxserve")

    @property
    def provider(self) -> str:
        return "voxserve"

    async def connection(self, options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> Connection:
        """The TTS's WebSocket, opened (or opened again after a failure) on first use, within the options'
        timeout, which then bounds each wait for the server on it (the options of the stream that asked
        last: streams sharing the socket share one timeout)."""
        async with self._lock:
            if self._connection is not None and not self._connection.failed:
                self._connection.timeout_s = options.timeout
            else:
                connection = self._client.connect(**self._config)
                connection.timeout_s = options.timeout
                try:
                    await connection.__aenter__()
                except VoxServeError as exc:
                    raise _api_error(exc) from None
                if connection.sample_rate != self.sample_rate:
                    await connection.aclose()
                    raise APIConnectionError(f"voxserve sends {connection.sample_rate} Hz, not {self.sample_rate}")
                self._connection = connection
            return self._connection

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return self._synthesize_with_stream(text, conn_options=conn_options)

    def stream(self, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> SynthesizeStream:
        return SynthesizeStream(tts=self, conn_options=conn_options)

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` without waiting for it (a cancel sent while a stream closes); failures are dropped:
        a socket already gone has nothing left to stop."""

        async def quietly() -> None:
            with contextlib.suppress(Exception):
                await work

        task = asyncio.create_task(quietly())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.aclose()
            self._connection = None
        await self._client.aclose()


def _api_error(exc: VoxServeError) -> APIError:
    """``exc`` as LiveKit's error: a timeout, a connection lost or refused (retryable), or a status."""
    if exc.code == "timeout":
        return APITimeoutError(f"voxserve: {exc.message}")
    closed = status_of(close=exc.status) if exc.code == "closed" else None  # a socket the server closed on purpose
    if exc.code == "unavailable" or (exc.code == "closed" and closed is None):
        return APIConnectionError(
            f"voxserve: {exc.message or exc.code}", retryable=exc.code == "unavailable" or exc.retryable
        )
    status = closed or status_of(code=exc.code) or (exc.status if exc.status and exc.status < 600 else 400)
    return APIStatusError(exc.message, status_code=status, body=exc.code, retryable=exc.retryable)


def _speakable(text: str) -> bool:
    """Whether ``text`` has a letter or digit: anything else (punctuation, emoji) the server refuses as
    nothing speakable (``voxserve.text.clean.is_speakable``, which a plugin's venv cannot import)."""
    return any(ch.isalnum() for ch in text)


class SynthesizeStream(tts.SynthesizeStream):
    """Text in as it comes, audio out as it is made: one voxserve context per segment."""

    def __init__(self, *, tts: TTS, conn_options: APIConnectOptions) -> None:
        super().__init__(tts=tts, conn_options=conn_options)
        self._voxserve = tts

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        connection = await self._voxserve.connection(self._conn_options)
        rate = self._voxserve.sample_rate
        output_emitter.initialize(
            request_id=shortuuid(), sample_rate=rate, num_channels=1, mime_type="audio/pcm", stream=True
        )
        # what the receiver does next, in order: speak a context (a segment has more than one when the server
        # closed one that waited too long for text), a silence (a segment with nothing to speak), end the
        # segment, or stop (the input ended)
        plan: asyncio.Queue[Context | str] = asyncio.Queue()
        live: list[Context] = []

        async def send() -> None:
            ctx: Context | None = None
            held = ""  # the segment's text before anything speakable came
            async for item in self._input_ch:
                if isinstance(item, self._FlushSentinel):  # a LiveKit flush ends the segment
                    await end_segment(ctx, held)
                    ctx, held = None, ""
                    continue
                if ctx is not None and ctx.finished:  # closed by the server for want of text: go on anew
                    ctx = None
                if ctx is None:
                    held += item
                    if not _speakable(held):
                        continue
                    item, held = held, ""
                    ctx = connection.context()
                    live.append(ctx)
                    await plan.put(ctx)
                self._mark_started()
                await ctx.push_text(item)
            await end_segment(ctx, held)
            await plan.put("stop")

        async def end_segment(ctx: Context | None, held: str) -> None:
            if ctx is not None:
                await ctx.end_input()
            elif held.strip():
                await plan.put("silence")
            await plan.put("end")

        async def receive() -> None:
            started, segment_s = False, 0.0  # the audio of the segment so far: a later context's words follow it
            while (step := await plan.get()) != "stop":
                if step == "end":
                    if started:
                        output_emitter.end_segment()
                    started = False
                    continue
                if not started:
                    output_emitter.start_segment(segment_id=step.id if isinstance(step, Context) else shortuuid())
                    started, segment_s = True, 0.0
                if not isinstance(step, Context):
                    output_emitter.push(bytes(2 * int(rate * SILENCE_S)))
                    segment_s += SILENCE_S
                    continue
                words, start_s = SourceWords(), segment_s  # the transcript shows the text as sent ("$5")
                async for frame in step:
                    timed = [
                        TimedString(f"{text} ", start_time=start_s + w.start_s, end_time=start_s + w.end_s)
                        for w, text in words(frame.words, step.text)
                    ]
                    if timed:
                        output_emitter.push_timed_transcript(timed)
                    if frame.audio:
                        output_emitter.push(frame.audio)
                        segment_s += len(frame.audio) / 2 / rate
                live.remove(step)

        tasks = [asyncio.create_task(send()), asyncio.create_task(receive())]
        try:
            await asyncio.gather(*tasks)
        except VoxServeError as exc:
            raise _api_error(exc) from None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for ctx in live:  # the stream was closed early: stop what the server still makes for it
                if ctx.done is None:
                    self._voxserve.in_background(ctx.cancel())
