"""An engine fault in one stream fails that stream alone, on every transport; everyone else is served.

(A model file corrupted on disk is refused at load with a clear message: tests/models/test_store.py,
``test_corrupt_model_is_detected_and_repaired`` and ``test_corruption_found_even_with_mtime_restored``;
a failed load keeps the server not ready: tests/server/test_readiness.py.)"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from typing import cast

import grpc
import httpx
import pytest
from websockets.sync.client import connect

from voxserve.runtime import Runtime
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc
from voxserve.server.runtime_api import RuntimeLike, SessionLike
from voxserve.types import AudioChunk, SynthesisParams

from .support import PIPER, SHORT, RunningServer, SharedRuntime, server_settings
from .test_ws import recv_json, send, utterance


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


BROKEN_SPEED = 1.25  # the marker: sessions opened at this speed fail after their first chunk


class _Breaks:
    """A real session that raises what ONNX Runtime would, after its first chunk."""

    def __init__(self, session: SessionLike) -> None:
        self._session = session

    def __getattr__(self, name: str) -> object:
        return getattr(self._session, name)

    async def __aiter__(self) -> AsyncIterator[AudioChunk]:
        async for chunk in self._session:
            yield chunk
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code")


class FaultyRuntime(SharedRuntime):
    def open_session(self, params: SynthesisParams, *, pace: bool = True) -> SessionLike:
        session = super().open_session(params, pace=pace)
        return cast(SessionLike, _Breaks(session)) if params.speed == BROKEN_SPEED else session


@pytest.fixture()
def faulty(shared_runtime: RuntimeLike) -> Iterator[RunningServer]:
    running = RunningServer(server_settings(), FaultyRuntime(shared_runtime))
    yield running
    running.stop()


def test_an_engine_fault_fails_only_its_stream(faulty: RunningServer) -> None:
    served: list[int] = []

    def bystander() -> None:  # a normal client at the same time
        for _ in range(3):
            reply = httpx.post(faulty.base + "/v1/audio/speech", json={"input": SHORT, "voice": PIPER}, timeout=60)
            served.append(reply.status_code)

    other = threading.Thread(target=bystander)
    other.start()
    # HTTP: the status line is out with the first chunk, so the response is cut short
    with httpx.stream(
        "POST", faulty.base + "/v1/audio/speech", json={"input": SHORT * 3, "voice": PIPER, "speed": BROKEN_SPEED}
    ) as reply:
        assert reply.status_code == 200
        with pytest.raises(httpx.HTTPError):
            reply.read()
    # WebSocket: error, then done, and the connection goes on
    with connect(faulty.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm", speed=BROKEN_SPEED)
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text=SHORT * 3)
        send(ws, type="close")
        kinds = []
        while (kind := recv_json(ws)["type"]) != "done":
            kinds.append(kind)
        assert kinds[-1] == "error" and "chunk" in kinds
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text=SHORT)
        send(ws, type="close")
        chunks, audio, done = utterance(ws)
        assert chunks and len(audio) > 10_000 and not done["cancelled"]
    # gRPC: the failing call ends INTERNAL; the next one on the same channel is served
    with grpc.insecure_channel(faulty.grpc) as channel:
        client = pb_grpc.VoxServeStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            list(client.SynthesizeStream(pb.SynthesizeRequest(text=SHORT * 3, voice=PIPER, speed=BROKEN_SPEED)))
        assert info.value.code() == grpc.StatusCode.INTERNAL
        assert client.Synthesize(pb.SynthesizeRequest(text=SHORT, voice=PIPER), timeout=30).audio
    other.join(120)
    assert served == [200, 200, 200]
    assert httpx.get(faulty.base + "/readyz").status_code == 200
