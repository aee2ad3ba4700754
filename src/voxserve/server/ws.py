"""WebSocket transport ``/v1/tts/stream``: JSON control frames in, JSON events + binary audio out.

Credentials: ``Authorization: Bearer`` header, ``?api_key=``/``?token=`` query, or the ``api_key``
field of the first (config) message. The protocol itself lives in :mod:`voxserve.server.duplex`, its
JSON form in :mod:`voxserve.server.protocol`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect, WebSocketState

from voxserve.errors import (
    Forbidden,
    IdleTimeout,
    InputTooLarge,
    InvalidInput,
    Unauthorized,
    VoxError,
    ws_close_code,
)
from voxserve.server import duplex as dx
from voxserve.server.auth import bearer_token
from voxserve.server.contexts import ContextStream, open_stream
from voxserve.server.protocol import event_json, parse_message
from voxserve.server.state import ServerState
from voxserve.settings import Settings

log = logging.getLogger("voxserve.server")
ws_router = APIRouter()
Stream = dx.DuplexStream | ContextStream


@dataclass(eq=False)
class _Open:
    """One connection as a server drain sees it (``ServerState.connections``), from accept to close."""

    stream: Stream | None = None
    sending: bool = False  # an event taken from the stream and not yet written

    @property
    def quiet(self) -> bool:
        return not self.sending and (self.stream is None or self.stream.quiet)


@ws_router.get("/v1/tts/stream", include_in_schema=False)
async def not_upgraded() -> JSONResponse:
    """A plain HTTP request to the WebSocket path (curl, a browser): 426 saying how to connect, not a 404."""
    message = "GET /v1/tts/stream is a WebSocket endpoint: connect with a WebSocket client (docs/protocol.md)"
    body = {"error": {"code": "upgrade_required", "message": message, "type": "UpgradeRequired"}}
    return JSONResponse(body, status_code=426, headers={"Upgrade": "websocket", "Connection": "Upgrade"})


@ws_router.websocket("/v1/tts/stream")
async def tts_stream(websocket: WebSocket) -> None:
    state: ServerState = websocket.app.state.vox
    await websocket.accept()
    status = "1000"
    opened = _Open()
    state.connections.add(opened)
    try:
        await _serve(websocket, state, opened)
    except WebSocketDisconnect as gone:  # 1000/1001 when the client closed, 1005/1006 when it vanished
        status = str(gone.code)
    except Exception as exc:  # the WebSocket transport's one error mapping
        status = str(ws_close_code(exc))
        await _close_with(websocket, exc)
    finally:
        state.connections.discard(opened)
        state.metrics.count("ws", "/v1/tts/stream", status)


async def _close_with(websocket: WebSocket, exc: Exception) -> None:
    if not isinstance(exc, VoxError):
        log.error("websocket closed on an unexpected error", exc_info=exc)
    if websocket.client_state is WebSocketState.CONNECTED:
        with contextlib.suppress(Exception):
            error = dx.Error.ending(exc)
            await websocket.send_text(json.dumps(event_json(error)))
            await websocket.close(code=ws_close_code(exc), reason=error.message[:120])


def _check_origin(websocket: WebSocket, allowed: list[str]) -> None:
    """Refuse a WebSocket a browser opened from another site's page (cross-site WebSocket hijacking: a
    WebSocket has no CORS preflight, so any page could speak through a server the visitor can reach).
    Allowed: no ``Origin`` (clients other than browsers send none), a page of this host (any port: a proxy
    passes the host without it), and the origins ``VOXSERVE_CORS_ORIGINS`` lists, as for HTTP."""
    origin = websocket.headers.get("origin")
    if origin is None or "*" in allowed or origin in allowed:
        return
    host = websocket.headers.get("host", "")
    if urlsplit(origin).hostname == urlsplit(f"//{host}").hostname:
        return
    raise Forbidden(f"a WebSocket from a page of {origin} is refused: add that origin to VOXSERVE_CORS_ORIGINS")


async def _serve(websocket: WebSocket, state: ServerState, opened: _Open) -> None:
    service = state.service
    settings = state.settings
    _check_origin(websocket, settings.cors_origins)
    client = websocket.client.host if websocket.client else ""
    query = websocket.query_params
    token = bearer_token(websocket.headers.get("authorization")) or query.get("api_key") or query.get("token")
    first: dx.ClientMessage | None = None
    if state.authenticator.enabled and not token:
        try:
            raw, first = await _first_message(websocket, settings)
        except IdleTimeout:
            raise Unauthorized(f"no credentials within {settings.ws_first_message_s:g} s of connecting") from None
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            token = json.loads(raw).get("api_key")  # type: ignore[arg-type]
    service.authorize(token, client)
    if first is None:  # the first message chooses the protocol (the server sends nothing before it)
        _, first = await _first_message(websocket, settings)
    # a stream slot is taken per utterance (context), not per connection
    stream = opened.stream = open_stream(service, "ws", client, first)
    try:
        sent = [asyncio.get_running_loop().time()]  # when the writer last sent an event
        reader = asyncio.create_task(_read(websocket, stream, first, settings, sent))
        writer = asyncio.create_task(_write(websocket, opened, sent))
        done, pending = await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        failures = [task.exception() for task in done]  # every one retrieved, none logged as lost
        for failure in failures:
            if failure is not None:
                raise failure
    finally:
        await stream.aclose()


async def _receive_text(websocket: WebSocket, limit: int) -> str | dx.Invalid:
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    text = message.get("text")
    if text is None:
        return dx.Invalid(InvalidInput("binary frames are not accepted; send JSON text frames"))
    if len(text.encode()) > limit:
        raise InputTooLarge(f"message larger than {limit} bytes")
    return str(text)


async def _first_message(websocket: WebSocket, settings: Settings) -> tuple[str | dx.Invalid, dx.ClientMessage]:
    """The connection's first message (it chooses the protocol), due within ``ws_first_message_s``."""
    raw = await _receive_idle(websocket, settings, [0.0], first=True)
    return raw, raw if isinstance(raw, dx.Invalid) else parse_message(raw)


async def _read(
    websocket: WebSocket, stream: Stream, first: dx.ClientMessage, settings: Settings, sent: list[float]
) -> None:
    await stream.handle(first)
    while True:
        raw = await _receive_idle(websocket, settings, sent, first=False)
        await stream.handle(raw if isinstance(raw, dx.Invalid) else parse_message(raw))


async def _receive_idle(
    websocket: WebSocket, settings: Settings, sent: list[float], *, first: bool
) -> str | dx.Invalid:
    """The next message. The first must come within ``ws_first_message_s``; later, a connection may be
    silent both ways (no message in, no event out) for ``ws_idle_timeout_s`` (0 = for ever).
    ``sent[0]`` is when the writer last sent an event."""
    loop = asyncio.get_running_loop()
    receiving = asyncio.ensure_future(_receive_text(websocket, settings.max_ws_message_bytes))
    wait = settings.ws_first_message_s if first else settings.ws_idle_timeout_s
    since = loop.time()
    try:
        while True:
            left = None if not wait else wait - (loop.time() - (since if first else max(since, sent[0])))
            done, _ = await asyncio.wait({receiving}, timeout=None if left is None else max(0.0, left))
            if done:
                return receiving.result()
            if left is not None and left <= 0:
                what = "no message" if first else "nothing sent or received"
                raise IdleTimeout(f"{what} for {wait:g} s; the idle connection is closed")
    finally:
        receiving.cancel()


async def _write(websocket: WebSocket, opened: _Open, sent: list[float]) -> None:
    assert opened.stream is not None
    async for event in opened.stream.events():
        opened.sending = True
        sent[0] = asyncio.get_running_loop().time()
        await websocket.send_text(json.dumps(event_json(event)))
        if isinstance(event, dx.Chunk):
            await websocket.send_bytes(event.chunk.audio)
        opened.sending = False
