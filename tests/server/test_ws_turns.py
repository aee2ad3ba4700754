"""WebSocket utterances one after another: what a voice agent's connection needs between its turns.

Real server (on the fake engines: see ``shared_runtime``), the real ``websockets`` client (see test_ws.py
for the basics)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from websockets.sync.client import connect

from voxserve.runtime import Runtime
from voxserve.server.runtime_api import RuntimeLike

from .audio_util import pcm_rms
from .support import KOKORO, PIPER, RunningServer, ServerMaker
from .test_ws import recv_json, send, utterance
from .test_ws_contexts import LONG


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


def test_an_utterance_with_nothing_to_speak_fails_alone(server: RunningServer) -> None:
    """Its error and done come in order; the utterances around it are spoken, the connection lives."""
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        for text in ("Hello there.", "... 😊 !", "This third one is still spoken."):
            send(ws, type="text", text=text)
            send(ws, type="close")
        _, first, done0 = utterance(ws)
        assert done0["utterance"] == 0 and pcm_rms(first) > 0.01
        error = recv_json(ws)
        assert error["type"] == "error" and error["code"] == "invalid_request" and "speak" in error["message"]
        done1 = recv_json(ws)
        assert done1["type"] == "done" and done1["utterance"] == 1 and done1["audio_s"] == 0
        _, third, done2 = utterance(ws)
        assert done2["utterance"] == 2 and not done2["cancelled"] and pcm_rms(third) > 0.01


def test_close_and_cancel_with_nothing_open_are_answered(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="close")
        assert recv_json(ws)["type"] == "ready"  # the default config, taken implicitly
        done = recv_json(ws)
        assert done["type"] == "done" and done["utterance"] == 0 and done["chunks"] == 0
        send(ws, type="cancel")
        done = recv_json(ws)
        assert done["type"] == "done" and done["utterance"] == 1 and done["cancelled"] is True


def test_idle_connections_hold_no_stream_slot(make_server: ServerMaker) -> None:
    """With one stream slot, a connection waiting between turns does not keep another caller out."""
    small = make_server(max_streams=1, max_queue=0)
    with connect(small.ws) as idle, connect(small.ws) as talker:
        send(idle, type="config", voice=PIPER)
        assert recv_json(idle)["type"] == "ready"
        send(idle, type="text", text="Spoken first.")
        send(idle, type="close")
        utterance(idle)
        assert small.metric("voxserve_active_streams") == 0.0
        send(talker, type="text", text="Now it is my turn.")
        send(talker, type="close")
        assert recv_json(talker)["type"] == "ready"
        _, audio, done = utterance(talker)
        assert not done["cancelled"] and pcm_rms(audio) > 0.01


def test_queued_utterances_wait_for_their_turn(server: RunningServer) -> None:
    """Text queued behind a playing utterance is not synthesized alongside it: one session at a time."""
    live: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            live.append(len(server.state.service._live))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with connect(server.ws) as ws:
            send(ws, type="config", voice=PIPER, format="pcm")
            recv_json(ws)
            for text in ("The first reply is a sentence or two long.", "Then a second.", "And a third."):
                send(ws, type="text", text=text)
                send(ws, type="close")
            numbers = [utterance(ws)[2]["utterance"] for _ in range(3)]
    finally:
        stop.set()
        watcher.join()
    assert numbers == [0, 1, 2]
    assert max(live) == 1, max(live)


def test_refused_config_does_not_fall_back_to_another_voice(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice="nobody")
        assert recv_json(ws)["code"] == "unknown_voice"
        send(ws, type="text", text="Which voice is this?")
        error = recv_json(ws)
        assert error["code"] == "invalid_request" and "config was refused" in error["message"]
        send(ws, type="config", voice=PIPER, lang="xx")
        assert recv_json(ws)["code"] == "unsupported_language"  # checked with the config, not at the text
        send(ws, type="config", voice=f"{KOKORO}:0.5+af_bella:0.5", format="pcm")  # a blend
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text="Now it speaks.")
        send(ws, type="close")
        _, audio, done = utterance(ws, timeout=60)
        assert not done["cancelled"] and pcm_rms(audio) > 0.01


def test_streamed_text_the_voice_cannot_read_is_refused_by_name_and_the_connection_speaks_on(
    server: RunningServer,
) -> None:
    """The text of a streamed utterance comes after its voice was chosen: a fragment that voice cannot
    read is refused as it arrives, saying which language it is and what to do, and the next utterance
    on the same connection is spoken."""
    with connect(server.ws) as ws:
        send(ws, type="config", voice=KOKORO, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text="今天天气很好")
        error = recv_json(ws)
        assert error["code"] == "unsupported_language", error
        assert f"voice '{KOKORO}' speaks English and cannot read the Chinese (Han script)" in error["message"]
        assert "no Chinese voice installed" in error["message"], error  # the fake runtime has none
        send(ws, type="cancel")
        done = recv_json(ws)
        assert done["type"] == "done" and done["audio_s"] == 0
        send(ws, type="text", text="English is spoken.")
        send(ws, type="close")
        _, audio, done = utterance(ws, timeout=60)
        assert not done["cancelled"] and pcm_rms(audio) > 0.01


def test_ready_announces_the_rate_the_audio_has(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="mulaw", sample_rate=24000)
        assert recv_json(ws)["sample_rate"] == 8000  # μ-law is always 8 kHz
        send(ws, type="config", voice=PIPER, format="opus", sample_rate=44100)
        assert recv_json(ws)["sample_rate"] == 48000  # Opus has no 44.1 kHz


def test_malformed_messages_are_refused_and_the_connection_lives(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        malformed: list[dict[str, object]] = [
            {"type": ["text"]},
            {"type": {}},
            {"type": None},
            {"type": "config", "word_timings": "no"},
        ]
        for bad in malformed:
            ws.send(json.dumps(bad))
            assert recv_json(ws)["code"] == "invalid_request", bad
        ws.send("[" * 30_000 + "]" * 30_000)  # nested deeper than the JSON parser goes, within the size limit
        assert recv_json(ws)["code"] == "invalid_request"
        send(ws, type="ping")
        assert recv_json(ws) == {"type": "pong"}


def test_chunk_times_count_the_samples_sent_at_any_rate(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm", sample_rate=16000)  # Piper makes 22.05 kHz
        assert recv_json(ws)["sample_rate"] == 16000
        send(ws, type="text", text="Resampled audio must still add up, chunk by chunk.")
        send(ws, type="close")
        chunks, audio, done = utterance(ws)
    position = 0.0
    for chunk in chunks:
        assert abs(chunk["offset_s"] - position) < 1e-3
        assert abs(chunk["bytes"] / 2 / 16000 - chunk["duration_s"]) < 1e-3, chunk
        position += chunk["duration_s"]
    assert abs(len(audio) / 2 / 16000 - done["audio_s"]) < 1e-3


def test_a_new_config_is_ready_only_after_the_utterance_before_it(make_server: ServerMaker) -> None:
    """Chunks carry no format or rate: the ready of a config sent while an utterance still plays comes
    after that utterance's last chunk and done, so a client switching its decoder at it decodes nothing
    of the old utterance in the new format. (Half a second of lookahead: the first utterance is still
    being made when the config comes.)"""
    with connect(make_server(lookahead_s=0.5).ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text="This first answer takes a couple of seconds to say.")
        send(ws, type="close")
        send(ws, type="config", voice=KOKORO, format="mp3")
        send(ws, type="text", text="Now in another voice.")
        send(ws, type="close")
        kinds: list[str] = []
        while kinds.count("done") < 2:
            event = recv_json(ws)
            kinds.append(event["type"] + (f" {event['format']}" if event["type"] == "ready" else ""))
    first_done = kinds.index("done")
    assert kinds.index("ready mp3") == first_done + 1, kinds
    assert "chunk" in kinds[:first_done] and "chunk" in kinds[first_done + 2 :], kinds


def test_utterances_queued_on_one_connection_are_bounded(make_server: ServerMaker) -> None:
    """Past ``max_contexts`` utterances queued or speaking, the next one's text is refused with
    ``too_many_contexts`` (30 MB of text queued on one socket used to be kept); the queued ones are
    spoken, and the connection lives."""
    small = make_server(max_contexts=2)
    with connect(small.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        for _ in range(3):
            send(ws, type="text", text=LONG)
            send(ws, type="close")
        refused = recv_json(ws)
        assert refused["type"] == "error" and refused["code"] == "too_many_contexts", refused
        send(ws, type="cancel")  # the two queued, and the third close's empty one
        for _ in range(3):
            done = recv_json(ws)
            assert done["type"] == "done", done  # and no other refusal
        send(ws, type="text", text="Still here.")
        send(ws, type="close")
        _, audio, done = utterance(ws)
        assert audio and not done["cancelled"]
