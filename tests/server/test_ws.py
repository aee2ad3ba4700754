"""WebSocket transport end to end with the real ``websockets`` client."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from .audio_util import pcm_rms
from .support import KOKORO, PIPER, SHORT, RunningServer, ServerMaker


def send(ws: ClientConnection, **message: object) -> None:
    ws.send(json.dumps(message))


def recv_json(ws: ClientConnection, timeout: float = 20) -> dict[str, Any]:
    while True:
        frame = ws.recv(timeout=timeout)
        if isinstance(frame, str):
            return dict(json.loads(frame))


def utterance(ws: ClientConnection, timeout: float = 30) -> tuple[list[dict[str, Any]], bytes, dict[str, Any]]:
    """Read chunk messages and their binary frames up to ``done``."""
    chunks: list[dict[str, Any]] = []
    audio = bytearray()
    while True:
        message = json.loads(ws.recv(timeout=timeout))
        if message["type"] == "done":
            return chunks, bytes(audio), message
        assert message["type"] == "chunk", message
        data = ws.recv(timeout=timeout)
        assert isinstance(data, bytes) and len(data) == message["bytes"]
        chunks.append(message)
        audio += data


def close_code(ws: ClientConnection) -> int:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=10)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code


def test_utterances_fragments_and_queueing(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm", word_timings=True)
        ready = recv_json(ws)
        assert ready["type"] == "ready" and ready["sample_rate"] == 22050 and ready["format"] == "pcm"
        for fragment in ("Hello there, ", "how can I ", "help you today?"):
            send(ws, type="text", text=fragment)
        send(ws, type="close")
        chunks, audio, done = utterance(ws)
        assert done["utterance"] == 0 and not done["cancelled"] and done["chunks"] == len(chunks)
        assert abs(len(audio) / 2 / 22050 - done["audio_s"]) < 0.01
        assert pcm_rms(audio) > 0.01 and done["ttfa_ms"] > 0
        offsets = [c["offset_s"] for c in chunks]
        assert offsets == sorted(offsets)

        # two utterances sent back to back: the second is made while the first plays, no gap between them
        send(ws, type="text", text="The first reply is this sentence right here.")
        send(ws, type="close")
        send(ws, type="text", text="And the second one follows it.")
        send(ws, type="close")
        start = time.perf_counter()
        _, _, first_done = utterance(ws)
        second_first = json.loads(ws.recv(timeout=20))
        gap = time.perf_counter() - start
        assert first_done["utterance"] == 1 and second_first["type"] == "chunk"
        # by the time the second utterance's first chunk is here, the first one's audio has not finished playing
        assert gap < first_done["audio_s"], (gap, first_done["audio_s"])
        ws.recv(timeout=20)
        _, _, second_done = utterance(ws)
        assert second_done["utterance"] == 2


def test_word_timings(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm", word_timings=True)
        recv_json(ws)
        send(ws, type="text", text=SHORT)
        send(ws, type="close")
        chunks, _, done = utterance(ws)
    words = [w for c in chunks for w in c["words"]]
    assert [w["word"] for w in words][:2] == ["Hello", "there"]
    assert all(0 <= w["start_s"] < w["end_s"] <= done["audio_s"] + 0.01 for w in words)


def test_flush_ping_and_cancel(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="ping")
        assert recv_json(ws) == {"type": "pong"}
        send(ws, type="text", text="no punctuation here at all")  # no config: default voice
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="flush")
        first = recv_json(ws, timeout=10)
        assert first["type"] == "chunk"  # spoken on flush, before close
        assert isinstance(ws.recv(timeout=10), bytes)
        send(ws, type="close")
        utterance(ws)

        send(ws, type="text", text=" ".join(["A long sentence that keeps the voice busy for a while."] * 10))
        send(ws, type="close")
        assert recv_json(ws)["type"] == "chunk"
        start = time.perf_counter()
        send(ws, type="cancel")
        while (message := recv_json(ws))["type"] != "done":
            pass
        assert message["cancelled"] is True and message["audio_s"] < 20
        assert time.perf_counter() - start < 2
        send(ws, type="text", text="Still here.")
        send(ws, type="close")
        _, audio, done = utterance(ws)
        assert not done["cancelled"] and len(audio) > 0


def test_bad_messages_are_refused_but_connection_lives(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        for bad in ("{not json", "[1, 2]", json.dumps({"type": "dance"}), json.dumps({"type": "text", "text": 5})):
            ws.send(bad)
            error = recv_json(ws)
            assert error["type"] == "error" and error["code"] == "invalid_request"
        ws.send(b"\x00\x01garbage\xff")
        assert recv_json(ws)["code"] == "invalid_request"
        send(ws, type="config", voice="nobody")
        assert recv_json(ws)["code"] == "unknown_voice"
        send(ws, type="config", voice=PIPER, speed=9)
        assert recv_json(ws)["code"] == "invalid_request"
        send(ws, type="config", voice=PIPER, format="mp3", sample_rate=16000)
        assert recv_json(ws)["sample_rate"] == 16000
        send(ws, type="ping")
        assert recv_json(ws)["type"] == "pong"


def test_a_plain_http_request_to_the_websocket_path_is_told_to_upgrade(server: RunningServer) -> None:
    plain = httpx.get(server.base + "/v1/tts/stream")
    assert plain.status_code == 426 and plain.headers["upgrade"] == "websocket"
    assert plain.json()["error"]["code"] == "upgrade_required"
    with connect(server.ws) as ws:  # the WebSocket itself is unchanged
        send(ws, type="ping")
        assert recv_json(ws)["type"] == "pong"


def test_oversized_message_closes_1009(server: RunningServer) -> None:
    with connect(server.ws, max_size=None) as ws:
        ws.send(json.dumps({"type": "text", "text": "x" * (server.settings.max_ws_message_bytes + 10)}))
        assert close_code(ws) == 1009


@pytest.mark.alone  # the rate is counted in real time
def test_fragments_beyond_the_rate_are_slowed_not_refused(make_server: ServerMaker) -> None:
    """An LLM may dump a buffered reply at once: the server reads it at its fragment rate (backpressure)
    and speaks all of it, instead of closing the connection."""
    strict = make_server(max_fragments_per_second=10)
    with connect(strict.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        start = time.perf_counter()
        words = [f"word{i} " for i in range(25)]
        for word in words:
            send(ws, type="text", text=word)
        send(ws, type="ping")
        assert recv_json(ws) == {"type": "pong"}  # answered after the 25 fragments were read
        read_all = time.perf_counter() - start
        send(ws, type="close")
        _, audio, done = utterance(ws)
    assert read_all >= 0.8 * (len(words) - 10) / 10, read_all  # 10 at once, then 10 a second
    assert not done["cancelled"] and done["audio_s"] > 5 and pcm_rms(audio) > 0.01


def test_auth(make_server: ServerMaker) -> None:
    secured = make_server(api_keys=["ws-key"])
    with connect(secured.ws) as ws:
        send(ws, type="config", voice=PIPER)
        assert recv_json(ws)["code"] == "unauthorized"
        assert close_code(ws) == 4001
    with connect(secured.ws + "?api_key=wrong") as ws:
        assert close_code(ws) == 4001
    for url, headers, first in (
        (secured.ws + "?api_key=ws-key", None, {}),
        (secured.ws, {"Authorization": "Bearer ws-key"}, {}),
        (secured.ws, None, {"api_key": "ws-key"}),
    ):
        with connect(url, additional_headers=headers) as ws:
            send(ws, type="config", voice=PIPER, **first)
            assert recv_json(ws)["type"] == "ready"


def test_over_capacity_and_disconnect(make_server: ServerMaker) -> None:
    busy = make_server(max_streams=1, max_queue=0)
    with connect(busy.ws, close_timeout=0.5) as holder:
        send(holder, type="text", text=" ".join(["Keep speaking this sentence again and again."] * 10))
        send(holder, type="close")
        assert recv_json(holder)["type"] == "ready"
        assert recv_json(holder)["type"] == "chunk"
        with connect(busy.ws) as refused:  # a connection costs no slot; its first utterance needs one
            send(refused, type="config", voice=PIPER)
            assert recv_json(refused)["type"] == "ready"
            send(refused, type="text", text="Hello.")
            assert recv_json(refused)["code"] == "overloaded"
            assert close_code(refused) == 1013
        assert busy.metric("voxserve_active_streams") == 1.0
    deadline = time.monotonic() + 3
    while busy.metric("voxserve_active_streams") != 0.0 or busy.state.service._live:
        assert time.monotonic() < deadline, "stream still active after the client left"
        time.sleep(0.05)


def test_kokoro(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=KOKORO, format="pcm")
        assert recv_json(ws)["sample_rate"] == 24000
        send(ws, type="text", text=SHORT)
        send(ws, type="close")
        _, audio, done = utterance(ws, timeout=60)
        assert 1.5 < done["audio_s"] < 4.5 and pcm_rms(audio) > 0.01
