"""Provoked faults for ``voxserve bench --soak``: cancels, abrupt disconnects and invalid requests on
every transport, run beside the normal listeners so that a long soak also exercises the paths where a
stream ends early or is refused.

Each operation returns when the server answered as the protocol says (an invalid request refused with
its 400-family code, a cancelled stream ended with its ``done``); anything else raises, and the soak
counts it as an unexpected error.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
from websockets.asyncio.client import connect

from voxserve.benchmark.transports import Clients, Job, TransportError, speak
from voxserve.client.waits import within
from voxserve.server.grpc_gen import voxserve_pb2 as pb

LONG = (
    "This answer is long enough to be cut off midway. It runs on for several sentences, so that a "
    "listener who changes their mind has time to stop it before the end, and the server must let go."
)
NO_VOICE = "no-such-voice"
PAUSE_S = 0.5
OP_TIMEOUT_S = 120.0


class UnexpectedAnswer(Exception):
    """The server answered a provoked fault other than the protocol says."""


BUSY_MARKS = ("HTTP 503", "1013", "RESOURCE_EXHAUSTED", "at capacity")


def refused_busy(error: str) -> bool:
    """Whether a failure is the server refusing for capacity (503, close 1013, RESOURCE_EXHAUSTED): the
    documented answer of a full server, which a client retries later."""
    return any(mark in error for mark in BUSY_MARKS)


@dataclass
class MischiefTally:
    """Provoked faults answered as expected, per kind; those refused because the server was full; and
    every unexpected answer (the first 50 kept as examples)."""

    expected: Counter[str] = field(default_factory=Counter)
    busy: Counter[str] = field(default_factory=Counter)
    unexpected: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"expected": dict(self.expected), "busy": dict(self.busy), "unexpected": dict(self.unexpected),
                "examples": self.examples}  # fmt: skip


async def http_drop(c: Clients, voice: str) -> None:
    """Reads the first audio of a long answer, then closes the response (the connection is dropped)."""
    body = {"input": LONG, "voice": voice, "response_format": "pcm"}
    async with c.http.stream("POST", "/v1/audio/speech", json=body) as response:
        if response.status_code != 200:
            raise UnexpectedAnswer(f"HTTP {response.status_code}")
        async for _ in response.aiter_raw():
            break


async def ws_drop(c: Clients, voice: str) -> None:
    """Aborts the TCP connection after the first audio, with no close handshake."""
    headers = {"Authorization": f"Bearer {c.api_key}"} if c.api_key else None
    ws = await connect(c.ws_url, additional_headers=headers)
    for message in ({"type": "config", "voice": voice, "format": "pcm"}, {"type": "text", "text": LONG}):
        await ws.send(json.dumps(message))
    await ws.send(json.dumps({"type": "close"}))
    while not isinstance(await ws.recv(), bytes):
        pass
    ws.transport.abort()


async def ws_cancel(c: Clients, voice: str) -> None:
    """Protocol 1: cancels after the first audio; the server must answer ``done`` with ``cancelled``."""
    headers = {"Authorization": f"Bearer {c.api_key}"} if c.api_key else None
    async with connect(c.ws_url, additional_headers=headers) as ws:
        await ws.send(json.dumps({"type": "config", "voice": voice, "format": "pcm"}))
        await ws.send(json.dumps({"type": "text", "text": LONG}))
        await ws.send(json.dumps({"type": "flush"}))
        while not isinstance(await ws.recv(), bytes):
            pass
        await ws.send(json.dumps({"type": "cancel"}))
        async for message in ws:
            if isinstance(message, str) and json.loads(message).get("type") == "done":
                if not json.loads(message).get("cancelled"):
                    raise UnexpectedAnswer(f"done without cancelled: {message[:200]}")
                return
        raise UnexpectedAnswer(f"closed before done ({ws.close_code})")


async def grpc_cancel(c: Clients, voice: str) -> None:
    """Cancels a server-streaming call after its first chunk."""
    call = c.stub.SynthesizeStream(
        pb.SynthesizeRequest(text=LONG, voice=voice, format="pcm"), metadata=c.metadata, timeout=OP_TIMEOUT_S
    )
    async for _ in call:
        call.cancel()
        break


async def _refused(transport: str, c: Clients, job: Job, prefix: str) -> None:
    try:
        await speak(transport, c, job)
    except TransportError as exc:
        if not str(exc).startswith(prefix):
            raise UnexpectedAnswer(str(exc)[:200]) from None
        return
    raise UnexpectedAnswer(f"{transport}: an invalid request was served")


async def http_invalid(c: Clients, voice: str) -> None:
    await _refused("http", c, Job("", voice, 24000), "HTTP 400")


async def ws_invalid(c: Clients, voice: str) -> None:
    await _refused("ws", c, Job("Hello.", NO_VOICE, 24000), "WebSocket config refused")


async def grpc_invalid(c: Clients, voice: str) -> None:
    await _refused("grpc", c, Job("Hello.", NO_VOICE, 24000), "gRPC INVALID_ARGUMENT")


Operation = Callable[[Clients, str], Awaitable[None]]
OPERATIONS: tuple[Operation, ...] = (
    http_drop, ws_drop, ws_cancel, grpc_cancel, http_invalid, ws_invalid, grpc_invalid,
)  # fmt: skip


async def mischief(clients: Clients, voices: tuple[str, ...], duration_s: float, tally: MischiefTally) -> None:
    """Cycles through :data:`OPERATIONS` and ``voices`` for ``duration_s``, one at a time, ``PAUSE_S`` apart."""
    deadline = time.perf_counter() + duration_s
    plan = ((voice, op) for _ in itertools.count() for voice in voices for op in OPERATIONS)
    for voice, op in plan:
        if time.perf_counter() >= deadline:
            return
        try:
            await within(op(clients, voice), OP_TIMEOUT_S)
            tally.expected[op.__name__] += 1
        except (Exception, grpc.aio.AioRpcError) as exc:  # every other answer is counted, and the soak goes on
            error = f"{op.__name__} {voice}: {type(exc).__name__}: {exc}"
            if refused_busy(error):
                tally.busy[op.__name__] += 1
            else:
                tally.unexpected[op.__name__] += 1
                if len(tally.examples) < 50:
                    tally.examples.append(error[:300])
        await asyncio.sleep(PAUSE_S)
