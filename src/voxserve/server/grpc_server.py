"""gRPC transport (grpc.aio): unary, server-streaming and duplex synthesis plus the standard health service.

Credentials travel in the ``authorization`` metadata (``Bearer <api key or JWT>``). Errors are mapped
in one place, :meth:`_ErrorsAndAuth._call`, which wraps every VoxServe method; messages are converted
in :mod:`voxserve.server.protocol`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio

from voxserve.errors import VoxError, error_body, grpc_status_name
from voxserve.server import duplex as dx
from voxserve.server.auth import bearer_token
from voxserve.server.connlimits import OpenPerClient
from voxserve.server.contexts import open_stream
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc
from voxserve.server.protocol import (
    grpc_chunk,
    grpc_client_message,
    grpc_event,
    grpc_request,
    grpc_words,
    send_within,
    stall_trailer,
)
from voxserve.server.proxies import client_address
from voxserve.server.state import ServerState

log = logging.getLogger("voxserve.server")
_SERVICE = "voxserve.v1.VoxServe"


def _client(context: grpc.aio.ServicerContext, state: ServerState) -> str:
    """The caller's address; behind a trusted proxy, the one its X-Forwarded-For names."""
    peer = context.peer() or ""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6":
        address = rest.rsplit(":", 1)[0].strip("[]")
    else:
        address = rest.rsplit(":", 1)[0] if kind == "ipv4" else peer
    metadata = dict(context.invocation_metadata() or ())
    forwarded = metadata.get("x-forwarded-for")
    return client_address(address, str(forwarded) if forwarded else None, state.settings.trusted_proxies)


async def _abort(context: grpc.aio.ServicerContext, exc: BaseException, count: Callable[[str], None]) -> None:
    """The gRPC transport's single mapping from an exception to a status."""
    count(grpc_status_name(exc))
    if not isinstance(exc, VoxError):
        log.exception("unhandled error in gRPC method", exc_info=exc)
    body = error_body(exc)["error"]
    assert isinstance(body, dict)
    trailers: list[tuple[str, str]] = [("voxserve-error-code", str(body["code"]))]
    if isinstance(exc, VoxError) and exc.retry_after_s is not None:
        trailers.append(("retry-after", str(max(1, round(exc.retry_after_s)))))
    await context.abort(grpc.StatusCode[grpc_status_name(exc)], str(body["message"]), tuple(trailers))


async def _write(context: grpc.aio.ServicerContext, message: Any, stall_s: float) -> bool:
    """Send one message of a stream; False when the call is over (the client cancelled or left)."""
    try:
        await send_within(context.write(message), stall_s)
    except (grpc.aio.InternalError, grpc.aio.UsageError):  # the write found the call ended
        return False
    return True


def listen_address(host: str, port: int) -> str:
    """gRPC's ``host:port`` to listen on; an IPv6 address (``::``, ``::1``) in brackets, as gRPC parses it."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _ErrorsAndAuth(grpc.aio.ServerInterceptor):
    """Authenticates, rate-limits, bounds the calls in flight per client (``max_connections_per_client``,
    as HTTP/WebSocket connections are) and maps errors for every VoxServe method."""

    def __init__(self, state: ServerState) -> None:
        self._state = state
        self._calls = OpenPerClient(state.settings.max_connections_per_client, "calls")

    @contextlib.contextmanager
    def _slot(self, context: grpc.aio.ServicerContext) -> Iterator[None]:
        """One of the caller's in-flight calls, held while the call runs; RateLimited past the cap."""
        address = _client(context, self._state)
        refused = self._calls.acquire(address)
        if refused is not None:
            raise refused
        try:
            yield
        finally:
            self._calls.release(address)

    def _authorize(self, context: grpc.aio.ServicerContext) -> None:
        metadata = dict(context.invocation_metadata() or ())
        token = bearer_token(str(metadata.get("authorization", ""))) or None
        self._state.service.authorize(token, _client(context, self._state))

    @contextlib.asynccontextmanager
    async def _call(self, context: grpc.aio.ServicerContext, count: Callable[[str], None]) -> AsyncIterator[None]:
        """One VoxServe call: the caller's in-flight slot, its credentials, and the gRPC transport's one
        mapping from an exception to a status (counted per method)."""
        try:
            with self._slot(context):
                self._authorize(context)
                yield
        except asyncio.CancelledError:  # the client cancelled or left
            count("CANCELLED")
            raise
        except grpc.aio.AbortError:
            raise
        except Exception as exc:
            await _abort(context, exc, count)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = getattr(handler_call_details, "method", "")
        if handler is None or not method.startswith(f"/{_SERVICE}/"):
            return handler
        route = method.rsplit("/", 1)[-1]

        def count(status: str) -> None:
            self._state.metrics.count("grpc", route, status)

        if handler.unary_unary is not None:
            inner_unary = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                async with self._call(context, count):
                    reply = await inner_unary(request, context)
                count("OK")
                return reply

            return grpc.unary_unary_rpc_method_handler(unary, handler.request_deserializer, handler.response_serializer)
        streaming = handler.unary_stream or handler.stream_stream
        assert streaming is not None
        stall_s = self._state.settings.client_stall_s

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> None:
            async with self._call(context, count):
                async for item in streaming(request, context):
                    if not await _write(context, item, stall_s):
                        count("CANCELLED")
                        return
            count("OK")

        factory = (
            grpc.unary_stream_rpc_method_handler if handler.unary_stream else grpc.stream_stream_rpc_method_handler
        )
        return factory(stream, handler.request_deserializer, handler.response_serializer)


class VoxServeServicer(pb_grpc.VoxServeServicer):
    def __init__(self, state: ServerState) -> None:
        self._state = state

    async def Synthesize(
        self, request: pb.SynthesizeRequest, context: grpc.aio.ServicerContext
    ) -> pb.SynthesizeResponse:
        service = self._state.service
        req = service.validate(grpc_request(request, one_message=True), needs_text=True)
        async with self._state.admission.slot(service.price(req)):
            utterance = service.speak(req, "grpc", _client(context, self._state))
            parts: list[bytes] = []
            words: list[pb.WordTiming] = []
            async for chunk in utterance.chunks():
                parts.append(chunk.audio)
                words.extend(grpc_words(chunk))
        summary = utterance.summary()
        context.set_trailing_metadata(stall_trailer(summary))
        return pb.SynthesizeResponse(
            audio=b"".join(parts),
            format=req.format,
            sample_rate=utterance.sample_rate,
            audio_s=summary.audio_s,
            words=words,
        )

    async def SynthesizeStream(
        self, request: pb.SynthesizeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.AudioChunk]:
        service = self._state.service
        req = service.validate(grpc_request(request), needs_text=True)
        async with self._state.admission.slot(service.price(req)):
            utterance = service.speak(req, "grpc", _client(context, self._state))
            async for chunk in utterance.chunks():
                yield grpc_chunk(chunk)
        context.set_trailing_metadata(stall_trailer(utterance.summary()))

    async def StreamingSynthesize(
        self, request_iterator: AsyncIterator[pb.StreamRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.StreamResponse]:
        messages = aiter(request_iterator)
        first = await anext(messages, None)  # chooses the protocol
        if first is None:
            return
        # a stream slot per utterance (context), not per call
        stream = open_stream(self._state.service, "grpc", _client(context, self._state), grpc_client_message(first))

        async def read() -> None:
            await stream.handle(grpc_client_message(first))
            async for message in messages:
                await stream.handle(grpc_client_message(message))
            await stream.end_input()

        reader = asyncio.create_task(read())
        try:
            async for event in stream.events(watch=reader):
                yield grpc_event(event)
        except Exception as exc:
            # The status follows at once (the interceptor maps it). The error goes in-band first, as on
            # the WebSocket: a client still writing text when the call ends may read grpc's own INTERNAL
            # ("Internal error from Core") in place of the status; the event reaches it before that.
            yield grpc_event(dx.Error.ending(exc))
            raise
        finally:
            reader.cancel()
            await stream.aclose()

    async def ListVoices(
        self, request: pb.ListVoicesRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListVoicesResponse:
        voices = [
            pb.Voice(id=v.id, engine=v.engine, lang=v.lang, gender=v.gender, sample_rate=v.sample_rate, name=v.name)
            for v in self._state.service.voices()
        ]
        return pb.ListVoicesResponse(voices=voices)


class GrpcServer:
    """The gRPC server of one ServerState, on ``settings.host:settings.grpc_port`` (port 0 in tests: any free)."""

    def __init__(self, state: ServerState, port: int | None = None) -> None:
        self._state = state
        self._requested_port = state.settings.grpc_port if port is None else port
        self.port = 0
        self._server = grpc.aio.server(
            interceptors=[_ErrorsAndAuth(state)],
            options=[("grpc.max_receive_message_length", 4 * 1024 * 1024), ("grpc.so_reuseport", 0)],
        )
        self._health = health_aio.HealthServicer()
        self._watch: asyncio.Task[None] | None = None

    async def start(self) -> None:
        pb_grpc.add_VoxServeServicer_to_server(VoxServeServicer(self._state), self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        settings = self._state.settings
        address = listen_address(settings.host, self._requested_port if self._requested_port > 0 else 0)
        if settings.tls_certfile and settings.tls_keyfile:
            credentials = grpc.ssl_server_credentials(
                [(settings.tls_keyfile.read_bytes(), settings.tls_certfile.read_bytes())]
            )
            self.port = self._server.add_secure_port(address, credentials)
        else:
            self.port = self._server.add_insecure_port(address)
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        await self._server.start()
        self._state.drain_hooks.append(self._on_drain)
        self._watch = asyncio.create_task(self._serving_when_loaded())
        log.info("gRPC listening on %s:%d", settings.host, self.port)

    async def _serving_when_loaded(self) -> None:
        await self._state.lifecycle.wait_loaded()
        if self._state.lifecycle.ready:
            await self._set_health(health_pb2.HealthCheckResponse.SERVING)

    async def _on_drain(self) -> None:
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)

    async def _set_health(self, status: int) -> None:
        await self._health.set("", status)
        await self._health.set(_SERVICE, status)

    async def stop(self, grace: float) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self._health.enter_graceful_shutdown()
        await self._server.stop(grace)
