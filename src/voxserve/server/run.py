"""``voxserve serve``: uvicorn (HTTP + WebSocket) and grpc.aio in one event loop, with a graceful drain."""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
from collections.abc import Callable
from types import FrameType

import uvicorn
from fastapi import FastAPI

from voxserve.engines.onnx import resolve_providers
from voxserve.server.app import create_app
from voxserve.server.connlimits import bounded_h11
from voxserve.server.state import ServerState
from voxserve.settings import Settings

log = logging.getLogger("voxserve.server")
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def _tls_context(config: uvicorn.Config, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    context = default()
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def uvicorn_config(settings: Settings, app: FastAPI, **overrides: object) -> uvicorn.Config:
    """The uvicorn settings voxserve runs with (also used by the tests)."""
    options: dict[str, object] = {
        "host": settings.host,
        "port": settings.port,
        "ws_max_size": settings.max_ws_message_bytes,
        "ws_ping_interval": 20.0,
        "ws_ping_timeout": 20.0,
        "timeout_graceful_shutdown": settings.shutdown_grace_s + 1.0,
        "access_log": False,  # voxserve writes its own JSON access lines
        "log_config": None,
        "lifespan": "on",
        # behind a load balancer: the client's address from X-Forwarded-For, from trusted proxies only
        "proxy_headers": True,
        "forwarded_allow_ips": ",".join(settings.trusted_proxies),
        # every client bounded: header size, slow headers (connlimits), idle keep-alive connections
        "http": bounded_h11(settings.header_timeout_s, settings.max_header_bytes),
        "h11_max_incomplete_event_size": settings.max_header_bytes,
        "timeout_keep_alive": settings.keep_alive_s,
    }
    if settings.tls_certfile and settings.tls_keyfile:
        options.update(
            ssl_certfile=str(settings.tls_certfile),
            ssl_keyfile=str(settings.tls_keyfile),
            ssl_context_factory=_tls_context,
        )
    options.update(overrides)
    return uvicorn.Config(app, **options)  # type: ignore[arg-type]


class DrainingServer(uvicorn.Server):
    """On SIGTERM/SIGINT: drain (readyz 503, finish or cancel streams), then let uvicorn shut down."""

    def __init__(self, config: uvicorn.Config, state: ServerState) -> None:
        super().__init__(config)
        self._state = state
        self._drain: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)  # type: ignore[arg-type]

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._drain is not None or self._loop is None:
            self.should_exit = True
            if sig == signal.SIGINT and self._drain is not None:
                self.force_exit = True
            return
        log.info("signal %d: draining (grace %.1f s)", sig, self._state.settings.shutdown_grace_s)
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        self._drain = asyncio.ensure_future(self._drain_then_exit())

    async def _drain_then_exit(self) -> None:
        try:
            await self._state.drain()
        finally:
            self.should_exit = True


def serve(settings: Settings) -> None:
    """Run the server until SIGTERM/SIGINT (blocking). Models load in the background; /readyz tells when."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    resolve_providers(settings.providers)  # a provider this machine lacks: refused before the ports open
    if settings.host not in _LOOPBACK and not settings.auth_enabled:
        log.warning("listening on %s without authentication: set VOXSERVE_API_KEYS or a JWT key", settings.host)
    state = ServerState.build(settings)
    app = create_app(settings, state=state)
    server = DrainingServer(uvicorn_config(settings, app), state)
    asyncio.run(server.serve())
