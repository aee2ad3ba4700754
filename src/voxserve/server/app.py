"""The FastAPI application: HTTP and WebSocket routes, the one error mapping, access logs, lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute, APIRouter
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from voxserve.client.waits import within
from voxserve.errors import ClientTooSlow, InputTooLarge, InvalidInput, Unauthorized, VoxError, error_body, http_status
from voxserve.policy import body_limit_bytes
from voxserve.server import audit, logsafe, openapi
from voxserve.server.connlimits import ClientConnections
from voxserve.server.http_routes import router
from voxserve.server.metrics import Metrics
from voxserve.server.runtime_api import RuntimeLike
from voxserve.server.state import ServerState
from voxserve.server.ws import ws_router
from voxserve.settings import Settings

access_log = logging.getLogger("voxserve.access")
_PROBES = frozenset({"/healthz", "/readyz"})
# never refused for the client's other connections: a probe or a scrape from behind the same address as a
# busy client (a NAT, the balancer) still reads the server's state
_UNCAPPED = _PROBES | {"/metrics"}
_ROUTES = frozenset(
    {
        "/v1/audio/speech",
        "/v1/voices",
        "/v1/audio/voices",
        "/v1/models",
        "/v1/models/{model_id}",
        "/metrics",
        *_PROBES,
    }
)

_WS_ROUTES = frozenset({"/v1/tts/stream"})


def _error_response(exc: BaseException) -> JSONResponse:
    """The HTTP transport's single mapping from an exception to a response."""
    headers = {}
    if isinstance(exc, VoxError) and exc.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="voxserve"'  # RFC 9110: a 401 names its scheme
    return JSONResponse(error_body(exc), status_code=http_status(exc), headers=headers)


def _unread(exc: BaseException) -> JSONResponse:
    """The error response to a request whose body was left unread (too large, or too slow): it closes
    the connection, whose next bytes would otherwise be the rest of that body. Kept open, the connection
    would wait for that body until the keep-alive timeout."""
    response = _error_response(exc)
    response.headers["Connection"] = "close"
    return response


def _body_problem(exc: RequestValidationError) -> InvalidInput:
    """A readable message for a body FastAPI could not take: what is wrong and what to send instead."""
    errors = exc.errors()
    kinds = {e["type"] for e in errors}
    send = "send a JSON object with Content-Type: application/json"
    if "json_invalid" in kinds:
        at = next(e["loc"][1] for e in errors if e["type"] == "json_invalid")
        return InvalidInput(f"request body is not valid JSON (error at character {at}); {send}")
    if "model_attributes_type" in kinds or "dict_type" in kinds:
        return InvalidInput(f"request body is not a JSON object; {send}")
    if any(e["type"] == "missing" and tuple(e["loc"]) == ("body",) for e in errors):
        return InvalidInput(f"request body is missing; {send}")
    details = "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}" for e in errors)
    return InvalidInput(f"invalid request body: {details}")


async def _on_error(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, RequestValidationError):
        exc = _body_problem(exc)
    elif isinstance(exc, StarletteHTTPException) and exc.status_code == 400:  # a body FastAPI could not parse
        exc = InvalidInput("request body could not be read as JSON (bytes that are not UTF-8, or nested too deep)")
    elif isinstance(exc, StarletteHTTPException):  # routing: unknown path, wrong method
        code, kind = {404: ("not_found", "NotFound"), 405: ("method_not_allowed", "MethodNotAllowed")}.get(
            exc.status_code, ("http_error", "HTTPError")
        )
        message = f"{request.method} {request.url.path}: {exc.detail}"
        body = {"error": {"code": code, "message": message, "type": kind}}
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)
    if not isinstance(exc, VoxError):
        logging.getLogger("voxserve.server").exception("unhandled error on %s", request.url.path)
    return _error_response(exc)


def _refuse_other_methods(app: FastAPI, api: APIRouter) -> None:
    """Answer every method on an API path: HEAD like GET, OPTIONS with 204 and ``Allow``, others 405
    with ``Allow``. Without this, they fall through to the playground's files (``GET
    /v1/audio/speech`` a 404, ``OPTIONS`` a 405 allowing only ``GET, HEAD``)."""
    for path in sorted(_ROUTES):
        routes = [r for r in api.routes if isinstance(r, APIRoute) and r.path == path]
        allowed = {m for r in routes for m in r.methods or ()}
        for route in routes:
            if "GET" in (route.methods or ()) and "HEAD" not in allowed:
                app.add_api_route(path, route.endpoint, methods=["HEAD"], include_in_schema=False)
        if "GET" in allowed:
            allowed.add("HEAD")
        allow = ", ".join(sorted(allowed | {"OPTIONS"}))
        app.add_api_route(path, _options(allow), methods=["OPTIONS"], include_in_schema=False)
        refused = sorted({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} - allowed)
        if refused:
            app.add_api_route(path, _refusal(allow), methods=refused, include_in_schema=False)


def _refusal(allow: str) -> Callable[[], Awaitable[None]]:
    async def refuse() -> None:
        raise StarletteHTTPException(405, "Method Not Allowed", headers={"Allow": allow})

    return refuse


def _options(allow: str) -> Callable[[], Awaitable[Response]]:
    async def options() -> Response:
        return Response(status_code=204, headers={"Allow": allow})

    return options


_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # a client's X-Request-Id that is kept as it is


def _request_id(scope: Scope) -> str:
    """The request's id: the client's ``X-Request-Id`` when it is a plain token, else a new one."""
    given = dict(scope.get("headers") or ()).get(b"x-request-id", b"").decode("latin-1")
    return given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex


class AccessLog:
    """Pure ASGI middleware: one JSON log line and one request count per HTTP request (never the body),
    and an ``X-Request-Id`` on every response (the client's own, or a new one), logged with the line, so
    a caller's report and the server's log meet."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500
        request_id = _request_id(scope)

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), (b"x-request-id", request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            path = scope["path"]
            route = path if path in _ROUTES else "other"
            self.metrics.count("http", route, status)
            client = scope.get("client")
            line = {
                "event": "http",
                "method": scope["method"],
                "path": route,
                "status": status,
                "ms": round((time.perf_counter() - start) * 1000.0, 1),
                "client": client[0] if client else None,
                "request_id": request_id,
            }
            access_log.info(json.dumps(line))


class BodyLimit:
    """Pure ASGI middleware: read a request body before the app does, refusing it past ``limit`` bytes
    (413) or when a part of it is ``timeout_s`` late (408), then hand it to the app whole."""

    def __init__(self, app: ASGIApp, limit: int, timeout_s: float) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = InputTooLarge(f"request body larger than {self.limit} bytes")
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _unread(too_large)(scope, receive, send)
            return
        # read the body here (up to the limit, each part within the body timeout), then replay it
        parts: list[bytes] = []
        seen = 0
        while True:
            try:
                message = await within(receive(), self.timeout_s)
            except TimeoutError:  # a slow body (slowloris)
                slow = ClientTooSlow(f"the request body did not arrive within {self.timeout_s:g} s")
                await _unread(slow)(scope, receive, send)
                return
            if message["type"] != "http.request":
                return  # the client left
            parts.append(message.get("body", b""))
            seen += len(parts[-1])
            if seen > self.limit:
                await _unread(too_large)(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(parts), "more_body": False}

        await self.app(scope, replay, send)


def create_app(settings: Settings, runtime: RuntimeLike | None = None, *, state: ServerState | None = None) -> FastAPI:
    """Build the app. ``runtime`` defaults to ``voxserve.runtime.Runtime(settings)``; loading starts with the app."""
    vox = state or ServerState.build(settings, runtime)
    logsafe.install(settings.api_keys)
    audit.open_file(settings.audit_log_file)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from voxserve.server.grpc_server import GrpcServer

        loading = asyncio.create_task(vox.lifecycle.load(vox.runtime))
        grpc_server = GrpcServer(vox) if settings.grpc_port else None
        if grpc_server is not None:
            await grpc_server.start()
            app.state.grpc_port = grpc_server.port
        try:
            yield
        finally:
            if grpc_server is not None:
                await grpc_server.stop(grace=min(settings.shutdown_grace_s, 5.0))
            loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loading
            vox.runtime.close()

    app = FastAPI(title="voxserve", version="0.1.0", lifespan=lifespan)
    app.state.vox = vox
    app.state.grpc_port = None
    app.include_router(router)
    app.include_router(ws_router)
    _refuse_other_methods(app, router)
    openapi.install(app, settings)
    # the browser playground (static files shipped in the package), after the API routes
    app.mount("/", StaticFiles(directory=Path(__file__).resolve().parent.parent / "web", html=True), name="playground")
    app.add_exception_handler(VoxError, _on_error)
    app.add_exception_handler(RequestValidationError, _on_error)
    app.add_exception_handler(StarletteHTTPException, _on_error)
    app.add_exception_handler(Exception, _on_error)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type"],
            expose_headers=["X-Sample-Rate", "X-Voice", "Retry-After", "X-Request-Id"],
        )
    app.add_middleware(BodyLimit, limit=body_limit_bytes(settings), timeout_s=settings.body_timeout_s)
    app.add_middleware(
        ClientConnections,
        limit=settings.max_connections_per_client,
        refused=lambda path, code: vox.metrics.count("ws", path if path in _WS_ROUTES else "other", code),
        exempt=_UNCAPPED,
    )
    app.add_middleware(AccessLog, metrics=vox.metrics)
    return app
