"""Bounds on every HTTP/WebSocket client at the connection level, and the per-client count gRPC shares.

- ``bounded_h11``: uvicorn's h11 protocol, closing a connection whose request head has not all arrived
  ``header_timeout_s`` after connecting or after the previous response (uvicorn has no such timeout:
  a client trickling headers, slowloris, held a connection for ever), and answering 431 to a head
  larger than ``max_header_bytes`` (uvicorn's ``h11_max_incomplete_event_size`` only bounds a head
  that arrives in pieces).
- ``ClientConnections``: ASGI middleware allowing each client address at most
  ``max_connections_per_client`` requests and WebSockets open at once; beyond, 429 (WebSocket: close
  4029) before any work is done.
- ``OpenPerClient``: the count behind that cap, one rule for both transports: the gRPC interceptor
  (grpc_server.py) holds one slot per call in flight, with the same setting.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from voxserve.errors import RateLimited, error_body, http_status, ws_close_code


def bounded_h11(timeout_s: float, max_head_bytes: int) -> type[H11Protocol]:
    """The h11 protocol class with a deadline and a size limit for each request's head."""

    class BoundedH11(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _head = b""

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._waiting():
                self._head += data[: max_head_bytes + 4 - len(self._head)]
                end = self._head.find(b"\r\n\r\n")
                if end > max_head_bytes or (end < 0 and len(self._head) > max_head_bytes):
                    self.transport.write(_TOO_LARGE)
                    self.transport.close()
                    return
            super().data_received(data)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self, event: Any) -> None:
            self._disarm()  # the head is in, and the connection is a WebSocket's from now on
            super().handle_websocket_upgrade(event)

        def _waiting(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            """A deadline while a request's head is awaited; none once it is in."""
            if not self._waiting():
                self._head = b""
                self._disarm()
            elif self._header_timer is None:
                self._header_timer = self.loop.call_later(timeout_s, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            if self._waiting() and self.transport.get_protocol() is self:
                self.transport.close()

    return BoundedH11


_TOO_LARGE = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class OpenPerClient:
    """How many connections (or gRPC calls: ``what``) each client address holds open, at most ``limit``
    (0: any). Used from one event loop, so the count needs no lock."""

    def __init__(self, limit: int, what: str = "connections") -> None:
        self.limit = limit
        self.what = what
        self._open: Counter[str] = Counter()

    def acquire(self, address: str) -> RateLimited | None:
        """Take a slot for ``address``; the refusal to send instead when it holds ``limit`` already."""
        if self.limit and self._open[address] >= self.limit:
            return RateLimited(f"more than {self.limit} {self.what} open from this client", retry_after_s=1.0)
        self._open[address] += 1
        return None

    def release(self, address: str) -> None:
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]


class ClientConnections:
    """Pure ASGI middleware: at most ``limit`` HTTP requests and WebSockets open per client address.
    ``refused(path, code)`` is told of each WebSocket it closes: the WebSocket route, which counts the
    others, never sees them (the access log counts HTTP refusals). Requests for ``exempt`` paths (the
    health probes: instant, and a probe must read the server's state, not its client's connections)
    are neither counted nor refused."""

    def __init__(
        self,
        app: ASGIApp,
        limit: int,
        refused: Callable[[str, int], None] | None = None,
        exempt: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self._open = OpenPerClient(limit)
        self._refused = refused
        self._exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        free = scope["type"] == "http" and scope.get("path") in self._exempt
        if scope["type"] not in ("http", "websocket") or not self._open.limit or free:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = client[0] if client else ""
        refused = self._open.acquire(address)
        if refused is not None:
            await _refuse(scope, receive, send, refused)
            if scope["type"] == "websocket" and self._refused is not None:
                self._refused(scope["path"], ws_close_code(refused))
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self._open.release(address)


async def _refuse(scope: Scope, receive: Receive, send: Send, exc: RateLimited) -> None:
    if scope["type"] == "websocket":  # accepted, so the client sees the close code (else an HTTP 403)
        if (await receive())["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": ws_close_code(exc), "reason": exc.message[:120]})
        return
    from starlette.responses import JSONResponse

    response = JSONResponse(error_body(exc), status_code=http_status(exc), headers={"Retry-After": "1"})
    await response(scope, receive, send)
