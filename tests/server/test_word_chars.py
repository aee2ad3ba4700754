"""Word timings point at the characters the client sent, on the WebSocket, gRPC and SSE (fake engines)."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.sync.client import connect

from voxserve.runtime import Runtime
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.runtime_api import RuntimeLike

from .support import PIPER, RunningServer
from .test_grpc import stub
from .test_ws import recv_json, send
from .test_ws_contexts import until_done


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


# "$5 $6": two changed tokens side by side, each word still pointing at its own
TEXT = "It costs $5 $6 on Jan 5, 2024, said Dr. Smith."
EXPECTED = {
    "five": "$5",
    "dollars": "$5",
    "six": "$6",
    "twenty": "2024",
    "Doctor": "Dr",
    "Smith": "Smith",
    "said": "said",
}


def check(words: list[tuple[str, int, int]]) -> None:
    read = {word: TEXT[start:end] for word, start, end in reversed(words)}  # the first of repeated words
    for word, original in EXPECTED.items():
        assert read.get(word) == original, (word, read)
    starts = [start for _, start, _ in words]
    assert starts == sorted(starts)


def test_websocket_fragments(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", protocol=2, voice=PIPER, word_timings=True)
        recv_json(ws)
        for start in range(0, len(TEXT), 5):  # fragments that cut "$5", "2024" and "Smith"
            send(ws, type="text", context_id="c", text=TEXT[start : start + 5])
        send(ws, type="close", context_id="c")
        events = until_done(ws, {"c"})["c"]
    check([(w["word"], w["char_start"], w["char_end"]) for m, _ in events if m["type"] == "chunk" for w in m["words"]])


def test_grpc(server: RunningServer) -> None:
    chunks = stub(server).SynthesizeStream(pb.SynthesizeRequest(text=TEXT, voice=PIPER, word_timings=True), timeout=30)
    words = [w for c in chunks for w in c.words]
    assert all(w.HasField("char_start") for w in words)
    check([(w.word, w.char_start, w.char_end) for w in words])


def test_sse(server: RunningServer) -> None:
    body = {"input": TEXT, "voice": PIPER, "response_format": "pcm", "stream_format": "sse", "timestamps": True}
    response = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    words = [w for e in events if e["type"] == "speech.audio.delta" for w in e["words"]]
    check([(w["word"], w["char_start"], w["char_end"]) for w in words])
