"""HTTP routes: OpenAI-compatible speech, voice and model catalogues, health and metrics."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.types import Message, Receive, Scope, Send

from voxserve.errors import ClientTooSlow, InvalidInput, VoxError
from voxserve.server.auth import Principal, bearer_token
from voxserve.server.metrics import CONTENT_TYPE
from voxserve.server.service import SpeechService
from voxserve.server.state import ServerState
from voxserve.server.utterance import EncodedChunk, SpeechRequest, Utterance, word_json
from voxserve.text.lexicon import parse_entries
from voxserve.types import WordTiming

log = logging.getLogger("voxserve.server")
# OpenAI voice names map to the server's default voice unless a voice of that name exists.
OPENAI_VOICES = frozenset(
    {"alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse", "marin", "cedar"}
)
OPENAI_PCM_RATE = 24000  # OpenAI's raw pcm is 24 kHz s16le; keep that default for unchanged clients
# OpenAI's model names speak with the requested (or default) voice; an engine name picks that engine
OPENAI_MODELS = frozenset({"tts-1", "tts-1-hd", "gpt-4o-mini-tts"})


class SpeechBody(BaseModel):
    model: str = "tts-1"
    input: str
    voice: str | None = None
    response_format: str = "mp3"
    speed: float = 1.0
    stream_format: Literal["audio", "sse"] = "audio"
    instructions: str | None = None  # accepted for compatibility; not used
    # voxserve extras
    lang: str | None = None
    sample_rate: int | None = None
    timestamps: bool = Field(default=False, description="Word timings in SSE delta events.")
    lexicon: list[Any] | None = Field(default=None, description="Pronunciation entries (docs/protocol.md).")
    input_format: str | None = Field(default=None, description="text or ssml (default: ssml if it starts <speak>)")


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.vox
    return state


def client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


async def authorize(request: Request) -> Principal:
    state = state_of(request)
    return state.service.authorize(bearer_token(request.headers.get("authorization")), client_ip(request))


class AudioStreamResponse(StreamingResponse):
    """Chunked audio that always frees its session and stream slot, even if the client leaves early."""

    def __init__(
        self, body: AsyncIterator[bytes], utterance: Utterance, state: ServerState, booked: float, **kwargs: object
    ) -> None:
        super().__init__(body, **kwargs)  # type: ignore[arg-type]
        self._utterance = utterance
        self._state = state
        self._booked = booked  # the stream's share of the machine, given back when the response ends

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stall = self._state.settings.client_stall_s

        async def send_or_give_up(message: Message) -> None:
            # a client that stops reading blocks the send once the socket's buffers are full
            try:
                await asyncio.wait_for(send(message), stall)
            except asyncio.TimeoutError:
                raise ClientTooSlow(f"the client took no audio for {stall:g} s") from None

        try:
            await super().__call__(scope, receive, send_or_give_up)
        except VoxError as exc:  # the status line is sent: all that is left is to cut the response short
            log.warning("%s stream ended early: %s", self._utterance.voice.id, exc.message)
        finally:
            if not self._utterance.finished:
                self._utterance.cancel()
            self._state.service.forget(self._utterance)
            self._state.admission.release(self._booked)


router = APIRouter()


@router.post("/v1/audio/speech")
async def speech(body: SpeechBody, request: Request, principal: Principal = Depends(authorize)) -> Response:
    state = state_of(request)
    service = state.service
    voice = _voice_for_model(service, body.model, body.voice)
    if body.timestamps and body.stream_format != "sse":
        raise InvalidInput('word timestamps come in SSE events: add "stream_format": "sse"')
    rate = body.sample_rate
    if rate is None and body.response_format.lower() == "pcm":
        rate = OPENAI_PCM_RATE
    req = service.validate(
        SpeechRequest(
            voice=voice,
            text=body.input,
            lang=body.lang,
            speed=body.speed,
            format=body.response_format,
            sample_rate=rate,
            word_timings=body.timestamps,
            lexicon=parse_entries(body.lexicon),
            input_format=body.input_format,
            # a streamed FLAC header can't hold the length, and libsndfile (soundfile) refuses such files:
            # FLAC comes whole, once made (faster than real time: the text is all there), also in SSE
            whole_file=body.response_format.lower() == "flac",
        ),
        needs_text=True,
    )
    booked = await state.admission.acquire(service.share(req))
    with contextlib.ExitStack() as undo:
        undo.callback(state.admission.release, booked)
        utterance = service.speak(req, "http", client_ip(request))
        undo.callback(utterance.cancel)
        # Wait for the first chunk before answering: what fails before any audio (text with nothing to
        # speak, a speed the engine refuses) then gets its own status code instead of a cut-off 200.
        chunks = utterance.chunks()
        first = await anext(chunks, None)
        undo.pop_all()
    headers = {"X-Sample-Rate": str(utterance.sample_rate), "X-Voice": utterance.voice.id, "Cache-Control": "no-store"}
    stream = _prepend(first, chunks)
    if body.stream_format == "sse":
        return AudioStreamResponse(
            _sse(utterance, stream), utterance, state, booked, media_type="text/event-stream", headers=headers
        )
    return AudioStreamResponse(
        _audio(stream), utterance, state, booked, media_type=utterance.content_type, headers=headers
    )


def _voice_for_model(service: SpeechService, model: str, voice: str | None) -> str | None:
    """The voice to speak with: ``model`` is an OpenAI model name or one of the server's engines."""
    name = model.strip().lower()
    engines = service.engines()
    if name not in OPENAI_MODELS and name not in engines:
        raise InvalidInput(f"unknown model {model!r}; use one of {', '.join(sorted(OPENAI_MODELS | set(engines)))}")
    if voice in OPENAI_VOICES and voice not in {v.id for v in service.voices()}:
        voice = None  # OpenAI's voice names speak with the default voice
    if name in OPENAI_MODELS:
        return voice
    if voice is None:
        default = service.voice(service.settings.default_voice)
        return default.id if default.engine == name else next(v.id for v in service.voices() if v.engine == name)
    if service.voice(voice).engine != name:
        raise InvalidInput(f"voice {voice!r} is not a {name} voice; leave out 'model' or pick a {name} voice")
    return voice


async def _prepend(first: EncodedChunk | None, rest: AsyncIterator[EncodedChunk]) -> AsyncIterator[EncodedChunk]:
    if first is None:
        return
    yield first
    async for chunk in rest:
        yield chunk


async def _audio(chunks: AsyncIterator[EncodedChunk]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        if chunk.audio:
            yield chunk.audio


async def _sse(utterance: Utterance, chunks: AsyncIterator[EncodedChunk]) -> AsyncIterator[bytes]:
    """One ``speech.audio.delta`` per chunk with audio; the last has ``final: true``. A chunk without
    bytes (a whole-file FLAC is all in the last one) sends nothing: its words go with the next delta."""
    words: list[WordTiming] = []
    async for chunk in chunks:
        words.extend(chunk.words)
        if not chunk.audio and not chunk.final:
            continue
        event: dict[str, object] = {"type": "speech.audio.delta", "audio": base64.b64encode(chunk.audio).decode()}
        if utterance.request.word_timings:
            event["words"] = [word_json(w) for w in words]
        event["final"] = chunk.final
        words = []
        yield _sse_line(event)
    summary = utterance.summary()
    chars = len(utterance.request.text)
    yield _sse_line(
        {
            "type": "speech.audio.done",
            "usage": {"input_tokens": chars, "output_tokens": 0, "total_tokens": chars},
            "audio_s": round(summary.audio_s, 3),
            "ttfa_ms": summary.ttfa_ms,
            "stall_s": round(summary.stall_s, 3),
        }
    )


def _sse_line(event: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


@router.get("/v1/voices")
@router.get("/v1/audio/voices")
async def voices(request: Request, principal: Principal = Depends(authorize)) -> dict[str, object]:
    items = [
        {"id": v.id, "name": v.name or v.id, "engine": v.engine, "lang": v.lang, "gender": v.gender,
         "sample_rate": v.sample_rate}
        for v in state_of(request).service.voices()
    ]  # fmt: skip
    return {"object": "list", "data": items, "voices": [item["id"] for item in items]}


@router.get("/v1/models")
async def models(request: Request, principal: Principal = Depends(authorize)) -> dict[str, object]:
    created = int(time.time())
    names = ["tts-1", "tts-1-hd", *state_of(request).service.engines()]
    return {
        "object": "list",
        "data": [{"id": name, "object": "model", "created": created, "owned_by": "voxserve"} for name in names],
    }


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> Response:
    """200 while this replica takes new streams; 503 while loading, draining, failed, or full (another
    stream of the default voice would not fit its capacity), so a balancer sends new callers elsewhere."""
    state = state_of(request)
    lifecycle, admission = state.lifecycle, state.admission
    body: dict[str, object] = {"status": lifecycle.phase.value, "load": round(admission.load, 3)}
    if lifecycle.error:
        body["error"] = lifecycle.error
    ready = lifecycle.ready
    if ready and not admission.fits(state.service.share(SpeechRequest())):
        body["status"], ready = "full", False
    return JSONResponse(body, status_code=200 if ready else 503)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(state_of(request).metrics.render(), media_type=CONTENT_TYPE)
