"""Chunk framing clients can rely on (docs/protocol.md): the last chunk says ``final``, in every format and
on every transport; ``done.chunks`` counts the chunk events sent; SSE sends no empty deltas.

Real server (on the fake engines), real clients (websockets, grpcio, httpx)."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from voxserve.audio import supported_formats
from voxserve.runtime import Runtime
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.runtime_api import RuntimeLike

from .support import PIPER, SHORT, RunningServer
from .test_grpc import stub
from .test_ws import recv_json, send, utterance


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


FORMATS = [f for f in ("pcm", "wav", "mp3", "opus", "flac", "mulaw") if f in supported_formats()]


def only_last_final(finals: list[bool]) -> bool:
    return len(finals) > 0 and finals[-1] and not any(finals[:-1])


@pytest.mark.parametrize("fmt", FORMATS)
def test_websocket_final_and_chunk_count(server: RunningServer, fmt: str) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format=fmt)
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text=SHORT)
        send(ws, type="close")
        chunks, audio, done = utterance(ws)
    assert done["chunks"] == len(chunks)
    assert only_last_final([c["final"] for c in chunks])
    assert all(c["duration_s"] > 0 for c in chunks), "no 0-second extra chunk"
    assert abs(sum(c["duration_s"] for c in chunks) - done["audio_s"]) < 0.01 and len(audio) > 0


@pytest.mark.parametrize("fmt", ["pcm", "wav", *(f for f in ("mp3", "opus") if f in FORMATS)])
def test_grpc_server_streaming_final(server: RunningServer, fmt: str) -> None:
    chunks = list(stub(server).SynthesizeStream(pb.SynthesizeRequest(text=SHORT, voice=PIPER, format=fmt), timeout=30))
    assert only_last_final([c.final for c in chunks])
    assert all(c.duration_s > 0 for c in chunks)


def sse_events(server: RunningServer, fmt: str) -> list[dict[str, Any]]:
    body = {"input": SHORT, "voice": PIPER, "response_format": fmt, "stream_format": "sse", "timestamps": True}
    response = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


@pytest.mark.parametrize("fmt", ["pcm", *(f for f in ("flac",) if f in FORMATS)])
def test_sse_deltas(server: RunningServer, fmt: str) -> None:
    events = sse_events(server, fmt)
    deltas = [e for e in events if e["type"] == "speech.audio.delta"]
    assert events[-1]["type"] == "speech.audio.done"
    assert all(base64.b64decode(d["audio"]) for d in deltas), "an empty delta"
    assert only_last_final([d["final"] for d in deltas])
    words = [w["word"] for d in deltas for w in d["words"]]
    assert words[:2] == ["Hello", "there"] and "today" in words
    if fmt == "flac":
        assert len(deltas) == 1 and base64.b64decode(deltas[0]["audio"])[:4] == b"fLaC"
