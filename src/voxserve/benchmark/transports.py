"""Clients for the three transports, each returning when audio arrived and how much.

Every client asks for raw 16-bit PCM at the voice's own sample rate, so audio seconds are counted
from bytes exactly and the server does no resampling the bench did not ask for. Times are seconds
after the request was sent (whole text) or after the first text fragment was sent (incremental);
WebSocket and gRPC connections are opened before that moment.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
from websockets.asyncio.client import ClientConnection, connect

from voxserve.benchmark.records import Arrivals, PcmCounter
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

TRANSPORTS = ("http", "ws", "grpc")


class TransportError(Exception):
    """The server refused or broke off a request; the message says how."""


@dataclass(frozen=True)
class Job:
    """One request: ``tokens_per_s`` set means the text goes as LLM-like fragments at that rate."""

    text: str
    voice: str
    sample_rate: int
    tokens_per_s: float | None = None


def fragments(text: str) -> list[str]:
    """LLM-like pieces of ``text``: words with their trailing space; two characters at a time where
    the script has no spaces (Chinese, Japanese)."""
    pieces: list[str] = []
    for word in re.findall(r"\S+\s*", text):
        if word.isascii() or len(word.strip()) <= 3:
            pieces.append(word)
        else:
            pieces.extend(word[i : i + 2] for i in range(0, len(word), 2))
    return pieces


def _trusted_roots() -> bytes | None:
    """The certificates HTTP and WebSocket trust here (``SSL_CERT_FILE``, as httpx and Python's ssl read
    it), for gRPC too, which otherwise trusts only its own bundled roots; None: those roots."""
    path = os.environ.get("SSL_CERT_FILE")
    return Path(path).read_bytes() if path and Path(path).is_file() else None


@dataclass
class Clients:
    """Connections shared by all requests of a run: one HTTP pool, one gRPC channel."""

    url: str
    grpc_target: str
    api_key: str | None = None
    http: httpx.AsyncClient = field(init=False)
    _channel: grpc.aio.Channel | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        # idle connections are dropped well before any server's keep-alive ends (uvicorn's default and
        # httpx's own expiry are both 5 s): a request sent as the server closes its connection fails
        # with no response, which says nothing of the server's speech
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=512, keepalive_expiry=2.0)
        self.http = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=120, limits=limits)

    @property
    def stub(self) -> pb_grpc.VoxServeStub:
        if self._channel is None and self.url.startswith("https:"):  # the server's gRPC port has its TLS too
            self._channel = grpc.aio.secure_channel(self.grpc_target, grpc.ssl_channel_credentials(_trusted_roots()))
        elif self._channel is None:
            self._channel = grpc.aio.insecure_channel(self.grpc_target)
        return pb_grpc.VoxServeStub(self._channel)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.api_key}"),) if self.api_key else ()

    @property
    def ws_url(self) -> str:
        return re.sub(r"^http", "ws", self.url) + "/v1/tts/stream"

    async def catalogue(self) -> dict[str, tuple[str, int]]:
        """Each voice's engine and native sample rate, from the server's catalogue."""
        response = await self.http.get("/v1/voices")
        response.raise_for_status()
        return {item["id"]: (str(item["engine"]), int(item["sample_rate"])) for item in response.json()["data"]}

    async def check_grpc(self, timeout_s: float = 5.0) -> None:
        """Raise :class:`TransportError` unless the gRPC server at ``grpc_target`` lists its voices within
        ``timeout_s``: a run over gRPC at a wrong target would otherwise fail every request."""
        try:
            await self.stub.ListVoices(pb.ListVoicesRequest(), metadata=self.metadata, timeout=timeout_s)
        except grpc.aio.AioRpcError as exc:
            raise TransportError(f"gRPC at {self.grpc_target}: {exc.code().name} ({exc.details()})") from None

    async def aclose(self) -> None:
        await self.http.aclose()
        if self._channel is not None:
            await self._channel.close()


async def speak(transport: str, clients: Clients, job: Job) -> Arrivals:
    """Run ``job`` over ``transport``; raises :class:`TransportError` when the server refuses it."""
    if transport == "http":
        if job.tokens_per_s is not None:
            raise TransportError("HTTP takes the whole text at once; use ws or grpc for incremental text")
        return await _http(clients, job)
    if transport == "ws":
        return await _ws(clients, job)
    if transport == "grpc":
        return await (_grpc_duplex(clients, job) if job.tokens_per_s is not None else _grpc_stream(clients, job))
    raise TransportError(f"unknown transport {transport!r}; choose one of {', '.join(TRANSPORTS)}")


async def _http(clients: Clients, job: Job) -> Arrivals:
    body = {"model": "tts-1", "input": job.text, "voice": job.voice, "response_format": "pcm",
            "sample_rate": job.sample_rate}  # fmt: skip
    t0 = time.perf_counter()
    counter = PcmCounter(job.sample_rate, t0)
    async with clients.http.stream("POST", "/v1/audio/speech", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            raise TransportError(f"HTTP {response.status_code}: {response.text[:200]}")
        async for data in response.aiter_raw():
            counter.add(len(data))
    return counter.arrivals


async def _paced(pieces: list[str], tokens_per_s: float | None) -> AsyncIterator[str]:
    """``pieces`` one by one, ``1 / tokens_per_s`` apart (all at once when no rate is set)."""
    for i, piece in enumerate(pieces):
        if i and tokens_per_s:
            await asyncio.sleep(1.0 / tokens_per_s)
        yield piece


async def _ws(clients: Clients, job: Job) -> Arrivals:
    headers = {"Authorization": f"Bearer {clients.api_key}"} if clients.api_key else None
    async with connect(clients.ws_url, additional_headers=headers, max_size=None) as ws:
        try:
            return await _ws_utterance(ws, job)
        except TransportError:
            # a refusal is the server's answer, not a client fault: close normally (leaving the block on
            # an exception would close with 1011, which the server counts as the connection's status)
            await ws.close()
            raise


async def _ws_utterance(ws: ClientConnection, job: Job) -> Arrivals:
    config = {"type": "config", "voice": job.voice, "format": "pcm", "sample_rate": job.sample_rate}
    await ws.send(json.dumps(config))
    ready = json.loads(await ws.recv())
    if ready.get("type") != "ready":
        raise TransportError(f"WebSocket config refused: {ready.get('message', ready)}")
    pieces = fragments(job.text) if job.tokens_per_s is not None else [job.text]
    t0 = time.perf_counter()
    counter = PcmCounter(job.sample_rate, t0)

    async def send() -> None:
        async for piece in _paced(pieces, job.tokens_per_s):
            await ws.send(json.dumps({"type": "text", "text": piece}))
        await ws.send(json.dumps({"type": "close"}))

    sender = asyncio.create_task(send())
    try:
        async for message in ws:
            if isinstance(message, bytes):
                counter.add(len(message))
                continue
            event = json.loads(message)
            if event.get("type") == "error":
                raise TransportError(f"{event.get('code')}: {event.get('message')}")
            if event.get("type") == "done":
                break
        else:
            raise TransportError(f"WebSocket closed before done ({ws.close_code} {ws.close_reason})")
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)
    return counter.arrivals


async def _grpc_stream(clients: Clients, job: Job) -> Arrivals:
    request = pb.SynthesizeRequest(text=job.text, voice=job.voice, format="pcm", sample_rate=job.sample_rate)
    t0 = time.perf_counter()
    counter = PcmCounter(job.sample_rate, t0)
    try:
        async for chunk in clients.stub.SynthesizeStream(request, metadata=clients.metadata):
            counter.add(len(chunk.audio))
    except grpc.aio.AioRpcError as exc:
        raise TransportError(f"gRPC {exc.code().name}: {exc.details()}") from None
    return counter.arrivals


async def _grpc_duplex(clients: Clients, job: Job) -> Arrivals:
    pieces = fragments(job.text)
    started: list[float] = []

    async def requests() -> AsyncIterator[pb.StreamRequest]:
        config = pb.StreamConfig(voice=job.voice, format="pcm", sample_rate=job.sample_rate)
        yield pb.StreamRequest(config=config)
        async for piece in _paced(pieces, job.tokens_per_s):
            if not started:
                started.append(time.perf_counter())
            yield pb.StreamRequest(text=pb.TextFragment(text=piece))
        yield pb.StreamRequest(close=pb.CloseUtterance())

    counter: PcmCounter | None = None
    try:
        async for response in clients.stub.StreamingSynthesize(requests(), metadata=clients.metadata):
            kind = response.WhichOneof("kind")
            if kind == "chunk":
                if counter is None:
                    counter = PcmCounter(job.sample_rate, started[0])
                counter.add(len(response.chunk.audio))
            elif kind == "error":
                raise TransportError(f"{response.error.code}: {response.error.message}")
            elif kind == "done":
                break
    except grpc.aio.AioRpcError as exc:
        raise TransportError(f"gRPC {exc.code().name}: {exc.details()}") from None
    return counter.arrivals if counter is not None else []
