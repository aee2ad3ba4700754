"""A LiveKit Agents TTS backed by a voxserve server (extra ``voxserve[livekit]``).

``TTS.stream()`` is real streaming input: each ``push_text`` goes to the server as it comes, over one
protocol-2 WebSocket the TTS keeps open; every LiveKit segment (text up to a ``flush``) is one voxserve
context, so segments and concurrent streams share the socket, and closing a stream cancels only its
context. Audio is raw PCM at ``sample_rate``, which the server resamples to; word timings come as aligned
transcripts (``TTSCapabilities.aligned_transcript``).

    from voxserve.integrations.livekit import TTS
    session = AgentSession(tts=TTS(base_url="http://127.0.0.1:8000", voice="af_heart"), ...)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from livekit.agents import APIConnectionError, APIConnectOptions, APIStatusError, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, TimedString
from livekit.agents.utils import shortuuid

from voxserve.client import AsyncClient, VoxServeError
from voxserve.client.aio import Connection, Context
from voxserve.client.types import source_words

DEFAULT_SAMPLE_RATE = 24000


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
        self._client = AsyncClient(base_url, api_key=api_key)
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

    async def connection(self) -> Connection:
        """The TTS's WebSocket, opened (or opened again after a failure) on first use."""
        async with self._lock:
            if self._connection is None or self._connection.failed:
                try:
                    connection = self._client.connect(**self._config)
                    await connection.__aenter__()
                except VoxServeError as exc:
                    raise _api_error(exc) from None
                except OSError as exc:
                    raise APIConnectionError(f"voxserve unreachable: {exc}") from exc
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


def _api_error(exc: VoxServeError) -> APIStatusError:
    status = exc.status if exc.status and exc.status < 600 else (503 if exc.retryable else 400)
    return APIStatusError(exc.message, status_code=status, body=exc.code, retryable=exc.retryable)


class SynthesizeStream(tts.SynthesizeStream):
    """Text in as it comes, audio out as it is made: one voxserve context per segment."""

    def __init__(self, *, tts: TTS, conn_options: APIConnectOptions) -> None:
        super().__init__(tts=tts, conn_options=conn_options)
        self._voxserve = tts

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        connection = await self._voxserve.connection()
        output_emitter.initialize(
            request_id=shortuuid(),
            sample_rate=self._voxserve.sample_rate,
            num_channels=1,
            mime_type="audio/pcm",
            stream=True,
        )
        segments: asyncio.Queue[Context | None] = asyncio.Queue()
        live: list[Context] = []

        async def send() -> None:
            ctx: Context | None = None
            async for item in self._input_ch:
                if isinstance(item, self._FlushSentinel):
                    if ctx is not None:
                        await ctx.end_input()  # a LiveKit flush ends the segment
                        ctx = None
                    continue
                if ctx is None:
                    ctx = connection.context()
                    live.append(ctx)
                    await segments.put(ctx)
                self._mark_started()
                await ctx.push_text(item)
            if ctx is not None:
                await ctx.end_input()
            await segments.put(None)

        async def receive() -> None:
            while (ctx := await segments.get()) is not None:
                output_emitter.start_segment(segment_id=ctx.id)
                async for frame in ctx:
                    # the transcript shows the text as sent ("$5", not "five dollars")
                    timed = [
                        TimedString(f"{text} ", start_time=w.start_s, end_time=w.end_s)
                        for w, text in source_words(frame.words, ctx.text)
                    ]
                    if timed:
                        output_emitter.push_timed_transcript(timed)
                    if frame.audio:
                        output_emitter.push(frame.audio)
                output_emitter.end_segment()
                live.remove(ctx)

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
