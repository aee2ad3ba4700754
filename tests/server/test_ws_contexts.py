"""Protocol 2 on the WebSocket: several contexts on one connection (docs/protocol.md).

Real server (on the fake engines: see ``shared_runtime``), the real ``websockets`` client."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from voxserve.runtime import Runtime
from voxserve.server.runtime_api import RuntimeLike

from .audio_util import pcm_rms
from .support import PIPER, RunningServer, ServerMaker
from .test_ws import recv_json, send

LONG = (
    "This first answer is long enough to be interrupted. It goes on for a few sentences, "
    "so that the listener has time to change their mind and ask something else instead."
)


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


def event(ws: ClientConnection, timeout: float = 30) -> tuple[dict[str, Any], bytes]:
    """The next event, with its audio frame for a chunk."""
    message = json.loads(ws.recv(timeout=timeout))
    if message["type"] != "chunk":
        return message, b""
    data = ws.recv(timeout=timeout)
    assert isinstance(data, bytes) and len(data) == message["bytes"]
    return message, data


def until_done(ws: ClientConnection, contexts: set[str]) -> dict[str, list[tuple[dict[str, Any], bytes]]]:
    """Every event per context until each of ``contexts`` has sent its ``done``."""
    seen: dict[str, list[tuple[dict[str, Any], bytes]]] = {}
    waiting = set(contexts)
    while waiting:
        message, data = event(ws)
        assert "context_id" in message, message
        context = message["context_id"]
        assert context not in contexts or context in waiting, f"event after done: {message}"
        seen.setdefault(context, []).append((message, data))
        if message["type"] == "done":
            waiting.discard(context)
    return seen


def audio_of(events: list[tuple[dict[str, Any], bytes]]) -> bytes:
    return b"".join(data for message, data in events if message["type"] == "chunk")


def open_v2(ws: ClientConnection, **options: object) -> dict[str, Any]:
    send(ws, type="config", protocol=2, voice=PIPER, format="pcm", **options)
    ready = recv_json(ws)
    assert ready["type"] == "ready" and "context_id" not in ready
    return ready


def test_overlapping_contexts_each_get_their_audio_and_done(server: RunningServer) -> None:
    """B starts while A still plays; both are spoken, every event names its context, framing holds."""
    with connect(server.ws) as ws:
        open_v2(ws, word_timings=True)
        send(ws, type="text", context_id="a", text="This first answer runs for a few seconds, long enough to overlap.")
        send(ws, type="close", context_id="a")
        first, _ = event(ws)
        assert first["type"] == "chunk" and first["context_id"] == "a"
        send(ws, type="text", context_id="b", text="A second voice line, ")
        send(ws, type="text", context_id="b", text="in two fragments.")
        send(ws, type="close", context_id="b")
        seen = until_done(ws, {"a", "b"})
        for context in ("a", "b"):
            chunks = [m for m, _ in seen[context] if m["type"] == "chunk"]
            done = seen[context][-1][0]
            assert done["type"] == "done" and not done["cancelled"]
            assert done["chunks"] == len(chunks) + (context == "a")  # a's first chunk was read above
            assert chunks[-1]["final"] is True and not any(c["final"] for c in chunks[:-1])
            assert pcm_rms(audio_of(seen[context])) > 0.01
        b_words = [w["word"] for m, _ in seen["b"] if m["type"] == "chunk" for w in m["words"]]
        assert "fragments" in " ".join(b_words)
        assert seen["a"][-1][0]["utterance"] == 0 and seen["b"][-1][0]["utterance"] == 1


def test_cancel_one_context_keeps_the_socket_and_the_other(server: RunningServer) -> None:
    """Barge-in: A is cancelled mid-sentence, B starts on the same socket; no audio of A after its done."""
    with connect(server.ws) as ws:
        open_v2(ws)
        send(ws, type="text", context_id="a", text=LONG)
        send(ws, type="flush", context_id="a")
        message, _ = event(ws)
        assert message["context_id"] == "a"
        send(ws, type="cancel", context_id="a")
        send(ws, type="text", context_id="b", text="Sure, what would you like instead?")
        send(ws, type="close", context_id="b")
        seen = until_done(ws, {"a", "b"})
        done_a = seen["a"][-1][0]
        assert done_a["cancelled"] is True
        assert done_a["chunks"] == 1 + sum(m["type"] == "chunk" for m, _ in seen["a"])
        assert done_a["audio_s"] < 5.0  # the whole answer is ~10 s
        done_b = seen["b"][-1][0]
        assert not done_b["cancelled"] and pcm_rms(audio_of(seen["b"])) > 0.01
        # the socket lives on: a third context after the interruption
        send(ws, type="text", context_id="c", text="Still here.")
        send(ws, type="close", context_id="c")
        assert until_done(ws, {"c"})["c"][-1][0]["chunks"] > 0


def test_bounds_and_refusals_name_the_context(make_server: ServerMaker) -> None:
    small = make_server(max_contexts=2, context_idle_s=0.5)
    with connect(small.ws) as ws:
        open_v2(ws)
        send(ws, type="text", text="No context named.")
        error = recv_json(ws)
        assert error["type"] == "error" and "context_id" in error["message"]
        send(ws, type="flush", context_id="nobody")
        error = recv_json(ws)
        assert error["code"] == "unknown_context" and error["context_id"] == "nobody"
        send(ws, type="text", context_id="a", text="One ")
        send(ws, type="text", context_id="b", text="Two ")
        send(ws, type="text", context_id="c", text="Three")
        error = recv_json(ws)
        assert error["code"] == "too_many_contexts" and error["context_id"] == "c"
        # a and b are left open: each expires, is spoken, and ends
        seen = until_done(ws, {"a", "b"})
        for context in ("a", "b"):
            kinds = [m.get("code", m["type"]) for m, _ in seen[context]]
            assert kinds[0] == "context_expired" and kinds[-1] == "done", kinds
            assert pcm_rms(audio_of(seen[context])) > 0.01
        send(ws, type="text", context_id="a", text="Reusing an ended id.")
        error = recv_json(ws)
        assert error["code"] == "unknown_context" and "ended" in error["message"]


def test_protocol_is_chosen_once(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER)
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="config", protocol=2, voice=PIPER)
        error = recv_json(ws)
        assert error["type"] == "error" and "first message" in error["message"]
    with connect(server.ws) as ws:
        send(ws, type="config", protocol=7, voice=PIPER)
        error = recv_json(ws)
        assert error["type"] == "error" and "protocol" in error["message"]


def test_a_context_can_have_its_own_voice(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        open_v2(ws, sample_rate=16000)
        send(ws, type="config", context_id="x", voice=PIPER, format="pcm", sample_rate=8000)
        ready = recv_json(ws)
        assert ready["context_id"] == "x" and ready["sample_rate"] == 8000
        send(ws, type="text", context_id="x", text="Low rate.")
        send(ws, type="close", context_id="x")
        started = time.monotonic()
        seen = until_done(ws, {"x"})
        done = seen["x"][-1][0]
        assert abs(len(audio_of(seen["x"])) / 2 / 8000 - done["audio_s"]) < 0.01
        assert time.monotonic() - started < 20
