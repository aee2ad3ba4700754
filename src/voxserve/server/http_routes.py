"""HTTP routes: OpenAI-compatible speech, voice and model catalogues, health and metrics."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Message, Receive, Scope, Send

from voxserve.errors import InvalidInput, VoxError
from voxserve.policy import SpeechRequest
from voxserve.routing import AUTO_VOICE
from voxserve.server.auth import Principal, bearer_token
from voxserve.server.metrics import CONTENT_TYPE
from voxserve.server.protocol import SpeechBody, audio_bytes, http_request, send_within, sse_events
from voxserve.server.service import SpeechService
from voxserve.server.state import ServerState
from voxserve.server.utterance import EncodedChunk, Utterance

log = logging.getLogger("voxserve.server")
# OpenAI voice names map to the server's default voice unless a voice of that name exists.
OPENAI_VOICES = frozenset(
    {"alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse", "marin", "cedar"}
)
# OpenAI's model names speak with the requested (or default) voice; an engine name picks that engine
OPENAI_MODELS = frozenset({"tts-1", "tts-1-hd", "gpt-4o-mini-tts"})


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.vox
    return state


def client_ip(request: Request) -> str:
    return request.client.host if request.client else ""


async def authorize(request: Request) -> Principal:
    state = state_of(request)
    return state.service.authorize(bearer_token(request.headers.get("authorization")), client_ip(request))


class AudioStreamResponse(StreamingResponse):
    """Chunked audio that always frees its session and stream slot, even if the client leaves early.

    ``held`` holds the stream's admission slot (``admission.slot``, entered by the route): it is
    closed, giving the slot back, when the response ends however it ends."""

    def __init__(
        self, body: AsyncIterator[bytes], utterance: Utterance, state: ServerState, held: AsyncExitStack, **kwargs: Any
    ) -> None:
        super().__init__(body, **kwargs)
        self._utterance = utterance
        self._state = state
        self._held = held

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stall_s = self._state.settings.client_stall_s

        async def send_or_give_up(message: Message) -> None:
            await send_within(send(message), stall_s)

        try:
            await super().__call__(scope, receive, send_or_give_up)
        except VoxError as exc:  # the status line is sent: all that is left is to cut the response short
            log.warning("%s stream ended early: %s", self._utterance.voice.id, exc.message)
        finally:
            if not self._utterance.finished:
                self._utterance.cancel()
            self._state.service.forget(self._utterance)
            await self._held.aclose()


router = APIRouter()


@router.post("/v1/audio/speech")
async def speech(body: SpeechBody, request: Request, principal: Principal = Depends(authorize)) -> Response:
    state = state_of(request)
    service = state.service
    req = service.validate(http_request(body, _voice_for_model(service, body.model, body.voice)), needs_text=True)
    _check_engine(service, body.model, req)
    async with AsyncExitStack() as undo:
        held = AsyncExitStack()
        await held.enter_async_context(state.admission.slot(service.price(req)))
        undo.push_async_callback(held.aclose)
        utterance = service.speak(req, "http", client_ip(request))
        undo.callback(utterance.cancel)
        # Wait for the first chunk before answering: what fails before any audio (text with nothing to
        # speak, a speed the engine refuses) then gets its own status code instead of a cut-off 200.
        chunks = utterance.chunks()
        first = await anext(chunks, None)
        undo.pop_all()  # the response holds the slot and the utterance from here on
    headers = {"X-Sample-Rate": str(utterance.sample_rate), "X-Voice": utterance.voice.id, "Cache-Control": "no-store"}
    stream = _prepend(first, chunks)
    if body.stream_format == "sse":
        return AudioStreamResponse(
            sse_events(utterance, stream), utterance, state, held, media_type="text/event-stream", headers=headers
        )
    return AudioStreamResponse(
        audio_bytes(stream), utterance, state, held, media_type=utterance.content_type, headers=headers
    )


def _voice_for_model(service: SpeechService, model: str, voice: str | None) -> str | None:
    """The voice to speak with: ``model`` is an OpenAI model name or one of the server's engines. None lets
    the text's language pick the voice (:mod:`voxserve.routing`): for ``auto``, and with an engine model for
    no voice or an OpenAI voice name when the default voice is of that engine (else that engine's first)."""
    name = model.strip().lower()
    engines = service.engines()
    if name not in OPENAI_MODELS and name not in engines:
        raise InvalidInput(
            f"unknown model {model[:40]!r}; use one of {', '.join(sorted(OPENAI_MODELS | set(engines)))}"
        )
    auto = voice is not None and voice.strip().lower() == AUTO_VOICE
    if auto or (voice in OPENAI_VOICES and voice not in {v.id for v in service.voices()}):
        voice = None  # 'auto' and OpenAI's voice names name no voice of their own
    if (
        name in OPENAI_MODELS
        or auto
        or (voice is None and service.voice(service.settings.default_voice).engine == name)
    ):
        return None if auto else voice
    if voice is None:
        return next(v.id for v in service.voices() if v.engine == name)
    if service.voice(voice).engine != name:
        raise InvalidInput(f"voice {voice!r} is not a {name} voice; leave out 'model' or pick a {name} voice")
    return voice


def _check_engine(service: SpeechService, model: str, request: SpeechRequest) -> None:
    """Refuse a request whose text's language took it to a voice of another engine than ``model`` names."""
    name = model.strip().lower()
    if name in OPENAI_MODELS or request.voice is None:
        return
    if service.voice(request.voice).engine != name:
        raise InvalidInput(
            f"the text's language is spoken by voice {request.voice!r}, not a {name} voice; "
            f"name a {name} voice that reads it, or leave out 'model'"
        )


async def _prepend(first: EncodedChunk | None, rest: AsyncIterator[EncodedChunk]) -> AsyncIterator[EncodedChunk]:
    if first is None:
        return
    yield first
    async for chunk in rest:
        yield chunk


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
    names = [*sorted(OPENAI_MODELS), *state_of(request).service.engines()]
    return {"object": "list", "data": [_model(name) for name in names]}


@router.get("/v1/models/{model_id}")
async def model(model_id: str, request: Request, principal: Principal = Depends(authorize)) -> dict[str, object]:
    """One model, as OpenAI's ``models.retrieve`` asks for it; an unknown one is a 404 in the error envelope."""
    if model_id not in OPENAI_MODELS | set(state_of(request).service.engines()):
        raise StarletteHTTPException(404, f"no model {model_id[:40]!r}; GET /v1/models lists them")
    return _model(model_id)


def _model(name: str) -> dict[str, object]:
    return {"id": name, "object": "model", "created": int(time.time()), "owned_by": "voxserve"}


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request) -> Response:
    """200 while this replica takes new streams; 503 while loading, draining, failed, or full (another
    stream of the default voice would not fit its capacity, or ``max_streams`` are running), so a balancer
    sends new callers elsewhere. The body says which: the load against capacity and the streams running."""
    state = state_of(request)
    lifecycle, admission = state.lifecycle, state.admission
    body: dict[str, object] = {
        "status": lifecycle.phase.value,
        "load": round(admission.load, 3),
        "streams": admission.active,
        "max_streams": admission.max_streams,
    }
    if lifecycle.error:
        body["error"] = lifecycle.error
    ready = lifecycle.ready
    if ready and not admission.fits(state.service.share(SpeechRequest())):
        body["status"], ready = "full", False
    return JSONResponse(body, status_code=200 if ready else 503)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(state_of(request).metrics.render(), media_type=CONTENT_TYPE)
