"""The asyncio client: HTTP one-shot and streamed synthesis, and duplex contexts over one WebSocket.

Speaks the wire protocols of docs/protocol.md; it imports nothing of the server.

    async with AsyncClient("http://127.0.0.1:8000") as client:
        speech = await client.synthesize("Hello.", voice="af_heart", format="wav")
        async with client.connect(voice="af_heart", word_timings=True) as conn:
            ctx = conn.context()
            await ctx.push_text("Sure, let me ")
            await ctx.push_text("check that.")
            await ctx.end_input()
            async for frame in ctx:
                play(frame.audio)
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

import httpx
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from voxserve.client.types import AudioFrame, Done, Ready, Speech, Voice, VoxServeError, words_of
from voxserve.client.waits import within

T = TypeVar("T")
_DEFAULT_WAIT_S = 1.0


async def with_retries(attempt: Callable[[], Awaitable[T]], retries: int, max_wait_s: float = 30.0) -> T:
    """Run ``attempt``; while it fails with a retryable error (HTTP 503, WebSocket 1013), wait what the
    server's Retry-After asked (else 1 s, doubling) and try again, at most ``retries`` more times."""
    wait = _DEFAULT_WAIT_S
    for left in range(retries, -1, -1):
        try:
            return await attempt()
        except VoxServeError as exc:
            if not exc.retryable or left == 0:
                raise
            await asyncio.sleep(min(max_wait_s, exc.retry_after_s if exc.retry_after_s is not None else wait))
            wait *= 2
    raise AssertionError("unreachable")


def _http_error(response: httpx.Response, body: bytes) -> VoxServeError:
    try:
        error = json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", body.decode(errors="replace")[:200]
    after = response.headers.get("retry-after")
    retry = float(after) if after and after.replace(".", "", 1).isdigit() else None
    return VoxServeError(code, message, status=response.status_code, retry_after_s=retry)


def _unreachable(url: str, exc: Exception) -> VoxServeError:
    """A request that never got the server's answer: ``timeout`` (no answer within the client's
    ``timeout_s``) or ``unavailable`` (no connection: the server is down or restarting; retryable)."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return VoxServeError("timeout", f"{url}: no answer within the client's timeout ({type(exc).__name__})")
    return VoxServeError("unavailable", f"{url}: cannot reach the server ({exc or type(exc).__name__})")


class AsyncClient:
    """A voxserve server at ``base_url`` (``http://host:port``). ``retries``: how often a busy server
    (503 / 1013) is asked again before the error is raised."""

    def __init__(self, base_url: str, *, api_key: str | None = None, retries: int = 3, timeout_s: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self._headers, timeout=timeout_s)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def voices(self) -> list[Voice]:
        try:
            response = await self._http.get("/v1/voices")
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if response.status_code != 200:
            raise _http_error(response, response.content)
        return [
            Voice(v["id"], v["engine"], v["lang"], v["gender"], int(v["sample_rate"])) for v in response.json()["data"]
        ]

    async def synthesize(self, text: str, **options: Any) -> Speech:
        """The whole utterance; ``options`` as for :meth:`stream`."""
        rates, frames = [0], []
        async for rate, frame in self._sse(text, **options):
            rates.append(rate)
            frames.append(frame)
        audio = b"".join(f.audio for f in frames)
        return Speech(audio, str(options.get("format", "pcm")), rates[-1], tuple(w for f in frames for w in f.words))

    async def stream(self, text: str, **options: Any) -> AsyncIterator[AudioFrame]:
        """Audio frames as the server makes them (HTTP, SSE events), with word timings if asked.
        ``options``: voice, format, sample_rate, speed, lang, word_timings, lexicon (docs/protocol.md)."""
        async for _, frame in self._sse(text, **options):
            yield frame

    async def _sse(
        self,
        text: str,
        *,
        voice: str | None = None,
        format: str = "pcm",
        sample_rate: int | None = None,
        speed: float = 1.0,
        lang: str | None = None,
        word_timings: bool = False,
        lexicon: list[dict[str, str]] | None = None,
    ) -> AsyncIterator[tuple[int, AudioFrame]]:
        body: dict[str, Any] = {"input": text, "response_format": format, "speed": speed, "stream_format": "sse"}
        options = (("voice", voice), ("sample_rate", sample_rate), ("lang", lang), ("lexicon", lexicon))
        body.update({k: v for k, v in options if v})
        body["timestamps"] = word_timings
        response = await with_retries(lambda: self._open_stream(body), self.retries)
        try:
            async for item in self._events(response, format):
                yield item
        except httpx.TransportError as exc:  # the stream broke off, or stalled past the timeout
            raise _unreachable(self.base_url, exc) from exc
        finally:
            await response.aclose()

    async def _events(self, response: httpx.Response, format: str) -> AsyncIterator[tuple[int, AudioFrame]]:
        """The frames of an SSE speech response."""
        rate = int(response.headers.get("x-sample-rate", 0))
        offset, index = 0.0, 0
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event.get("type") == "error" or "error" in event:
                error = event.get("error", event)
                raise VoxServeError(str(error.get("code", "error")), str(error.get("message", "")))
            if event.get("type") != "speech.audio.delta":
                continue
            audio = base64.b64decode(event["audio"])
            duration = _duration(audio, format, rate)
            words = words_of(event.get("words"))
            yield rate, AudioFrame(audio, offset, duration, words, bool(event.get("final")), index)
            offset += duration
            index += 1

    async def _open_stream(self, body: dict[str, Any]) -> httpx.Response:
        request = self._http.build_request("POST", "/v1/audio/speech", json=body)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if response.status_code != 200:
            content = await response.aread()
            await response.aclose()
            raise _http_error(response, content)
        return response

    def connect(self, **config: Any) -> Connection:
        """A protocol-2 WebSocket (``async with``); ``config``: voice, format, sample_rate, speed, lang,
        word_timings, lexicon: the defaults of its contexts."""
        ws_url = "ws" + self.base_url[4:] if self.base_url.startswith("http") else self.base_url
        return Connection(ws_url + "/v1/tts/stream", self._headers, config, self.retries, self.timeout_s)


def _duration(audio: bytes, fmt: str, rate: int) -> float:
    """Seconds of audio in a raw PCM chunk (16-bit mono); 0 when the format does not tell by its size."""
    return len(audio) / 2 / rate if fmt == "pcm" and rate else 0.0


class Connection:
    """One protocol-2 WebSocket. Open contexts with :meth:`context`; events are routed to them.

    ``timeout_s`` bounds each wait on the server: the handshake and its ``ready``, and, once a context's
    input has ended, each of its frames and its ``done`` (before that the client sets the pace: a
    context waiting for the client's own text is not timed)."""

    def __init__(
        self, url: str, headers: dict[str, str], config: dict[str, Any], retries: int, timeout_s: float = 60.0
    ) -> None:
        self._url = url
        self._headers = headers
        self._config = {k: v for k, v in config.items() if v is not None}
        self._retries = retries
        self.timeout_s = timeout_s
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._contexts: dict[str, Context] = {}
        self._failure: BaseException | None = None
        self.ready: Ready | None = None

    async def __aenter__(self) -> Connection:
        await with_retries(self._open, self._retries)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _open(self) -> None:
        try:
            ws = await ws_connect(
                self._url, additional_headers=self._headers, max_size=None, open_timeout=self.timeout_s
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise VoxServeError("http_error", f"WebSocket handshake got {status}", status=status) from None
        except (OSError, TimeoutError) as exc:  # refused, unreachable, or no handshake in time
            raise _unreachable(self._url, exc) from exc
        try:
            await ws.send(json.dumps({"type": "config", "protocol": 2, **self._config}))
            message = json.loads(await within(ws.recv(), self.timeout_s))
        except TimeoutError:
            await ws.close()
            raise VoxServeError("timeout", f"{self._url}: no ready event within the client's timeout") from None
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else 1006
            raise VoxServeError("closed", exc.rcvd.reason if exc.rcvd else "connection lost", status=code) from None
        if message.get("type") != "ready":
            await ws.close()
            raise VoxServeError.from_event(message)
        self.ready = Ready(message["session_id"], int(message["sample_rate"]), message["format"])
        self._ws = ws
        self._reader = asyncio.create_task(self._read())

    @property
    def sample_rate(self) -> int:
        assert self.ready is not None, "not connected"
        return self.ready.sample_rate

    @property
    def failed(self) -> bool:
        """The socket is closed or lost: open a new connection."""
        return self._ws is None or self._failure is not None

    def context(self, context_id: str | None = None) -> Context:
        """A new context (opened on the server by its first text)."""
        cid = context_id or uuid.uuid4().hex[:12]
        ctx = Context(self, cid)
        self._contexts[cid] = ctx
        return ctx

    async def send(self, **message: Any) -> None:
        if self._failure is not None:
            raise self._failure
        assert self._ws is not None, "not connected"
        await self._ws.send(json.dumps(message))

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            while True:
                message = json.loads(await self._ws.recv())
                ctx = self._contexts.get(message.get("context_id") or "")
                kind = message.get("type")
                if kind == "chunk":
                    audio = await self._ws.recv()
                    assert isinstance(audio, bytes)
                    if ctx is not None:
                        ctx._put(_frame(message, audio))
                elif kind == "done" and ctx is not None:
                    ctx._put(Done.from_json(message))
                    self._contexts.pop(ctx.id, None)
                elif kind == "error" and ctx is not None and message.get("code") == "context_expired":
                    ctx.finished = True  # it takes no more text; its last audio and its done follow
                elif kind == "error" and ctx is not None:
                    ctx._put(VoxServeError.from_event(message))
        except ConnectionClosed as exc:
            code = exc.rcvd.code if exc.rcvd is not None else 1006
            self._fail(VoxServeError("closed", exc.rcvd.reason if exc.rcvd else "connection lost", status=code))
        except Exception as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self._failure = exc
        for ctx in self._contexts.values():
            ctx._put(exc)

    async def aclose(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        if self._ws is not None:
            await self._ws.close()


def _frame(message: dict[str, Any], audio: bytes) -> AudioFrame:
    return AudioFrame(
        audio,
        float(message["offset_s"]),
        float(message["duration_s"]),
        words_of(message.get("words")),
        bool(message.get("final")),
        int(message.get("index", 0)),
        message.get("context_id"),
    )


class Context:
    """One context of a :class:`Connection`: send text to it, iterate its audio frames until its ``done``
    (then :attr:`done` holds it). A server error for it is raised from the iteration."""

    def __init__(self, connection: Connection, context_id: str) -> None:
        self.id = context_id
        self.done: Done | None = None
        self.text = ""  # all text sent to the context: what words' char_start/char_end index
        self._connection = connection
        self._ended = False  # end_input or cancel sent: the server owes the rest, within the timeout
        # the server has closed the context (one idle too long: from its context_expired, before the last
        # audio and the done) or ended it (its done; also one that failed); text sent to it from then on
        # is refused: open a new context
        self.finished = False
        self._events: asyncio.Queue[AudioFrame | Done | BaseException] = asyncio.Queue()

    def _put(self, event: AudioFrame | Done | BaseException) -> None:
        self.finished = self.finished or isinstance(event, Done)
        self._events.put_nowait(event)

    async def push_text(self, text: str) -> None:
        await self._connection.send(type="text", context_id=self.id, text=text)
        self.text += text

    async def flush(self) -> None:
        await self._connection.send(type="flush", context_id=self.id)

    async def end_input(self) -> None:
        """No more text: the rest of the audio comes, then ``done``."""
        await self._connection.send(type="close", context_id=self.id)
        self._ended = True

    async def cancel(self) -> None:
        """Stop this context now; its iteration ends after the ``done`` (``cancelled: true``)."""
        await self._connection.send(type="cancel", context_id=self.id)
        self._ended = True

    def __aiter__(self) -> AsyncIterator[AudioFrame]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[AudioFrame]:
        while self.done is None:
            try:
                event = await within(self._events.get(), self._connection.timeout_s if self._ended else None)
            except TimeoutError:
                raise VoxServeError(
                    "timeout", f"context {self.id}: nothing from the server within the client's timeout"
                ) from None
            if isinstance(event, BaseException):
                raise event
            if isinstance(event, Done):
                self.done = event
                return
            yield event
