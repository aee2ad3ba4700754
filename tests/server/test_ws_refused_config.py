"""A refused ``config`` is never followed by text spoken with another config (docs/protocol.md), however
it was refused: a value the policy refuses, a field of the wrong type, a malformed lexicon entry, a
protocol the connection does not speak. On protocol 2 the rule holds per context.

Real server on the fake engines (what is checked is the protocol), the real ``websockets`` client."""

from __future__ import annotations

import re

import pytest
from websockets.sync.client import connect

from voxserve.runtime import Runtime
from voxserve.server.runtime_api import RuntimeLike

from .support import PIPER, RunningServer
from .test_ws import recv_json, send, utterance
from .test_ws_contexts import audio_of, until_done

REFUSED = [
    ({"voice": "nobody"}, "unknown_voice", "nobody"),
    ({"voice": PIPER, "speed": "fast"}, "invalid_request", 'speed must be a number, got "fast"'),
    ({"voice": PIPER, "lexicon": [{"word": "x"}]}, "invalid_request", "lexicon"),
    # phonemes the voice's alphabet lacks (Kokoro's misaki for a Piper voice): refused at the config, where
    # before every utterance failed after a ready
    (
        {"voice": PIPER, "lexicon": [{"word": "tomato", "phonemes": "təmˈAtO"}]},
        "invalid_request",
        "lexicon entry 'tomato'.*'espeak' alphabet does not have",
    ),
    ({"voice": PIPER, "protocol": 3}, "invalid_request", r"protocol must be one of \(1, 2\), got 3"),
]


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    return fake_runtime


@pytest.mark.parametrize(("config", "code", "message"), REFUSED)
def test_text_after_a_refused_config_is_refused_until_one_is_accepted(
    server: RunningServer, config: dict[str, object], code: str, message: str
) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", **config)
        refused = recv_json(ws)
        assert refused["type"] == "error" and refused["code"] == code
        assert re.search(message, refused["message"]), refused
        send(ws, type="text", text="Never spoken with the defaults.")
        ignored = recv_json(ws)
        assert ignored["type"] == "error" and "text ignored" in ignored["message"], ignored
        send(ws, type="config", voice=PIPER)
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text="Spoken now.")
        send(ws, type="close")
        _, audio, done = utterance(ws)
        assert audio and not done["cancelled"]


def test_null_options_take_their_defaults(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, speed=None, format=None, sample_rate=None, lang=None)
        ready = recv_json(ws)
        assert ready["type"] == "ready" and ready["format"] == "pcm", ready


def test_protocol_2_refuses_text_for_a_context_whose_config_was_refused(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", protocol=2, voice=PIPER)
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="config", context_id="a", voice="nobody")
        assert recv_json(ws)["code"] == "unknown_voice"
        send(ws, type="config", context_id="b", voice=PIPER, speed="fast")
        assert recv_json(ws)["context_id"] == "b"
        for context in ("a", "b"):
            send(ws, type="text", context_id=context, text="Never in the default voice.")
            ignored = recv_json(ws)
            assert ignored["context_id"] == context and "text ignored" in ignored["message"], ignored
        send(ws, type="text", context_id="c", text="Another context is spoken.")  # the defaults stand
        send(ws, type="close", context_id="c")
        assert audio_of(until_done(ws, {"c"})["c"])
        send(ws, type="config", context_id="a", voice=PIPER)
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", context_id="a", text="Spoken now.")
        send(ws, type="close", context_id="a")
        assert audio_of(until_done(ws, {"a"})["a"])


def test_protocol_2_refused_defaults_refuse_text_that_would_open_a_context_with_them(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", protocol=2, voice="nobody")
        assert recv_json(ws)["code"] == "unknown_voice"
        send(ws, type="text", context_id="a", text="Never in another voice.")
        assert "text ignored" in recv_json(ws)["message"]
        send(ws, type="config", context_id="b", voice=PIPER)  # a context of its own config is fine
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", context_id="b", text="Spoken.")
        send(ws, type="close", context_id="b")
        assert audio_of(until_done(ws, {"b"})["b"])


def test_a_close_after_a_refused_first_config_takes_no_defaults(server: RunningServer) -> None:
    """The close is answered with its done and nothing else: no ready for the defaults, which would then
    have spoken the next text in a voice and format never asked for (pcm, not the mp3 the client wanted)."""
    with connect(server.ws) as ws:
        send(ws, type="config", voice="nobody", format="mp3")
        assert recv_json(ws)["code"] == "unknown_voice"
        send(ws, type="close")
        done = recv_json(ws)
        assert done["type"] == "done" and done["chunks"] == 0 and not done["cancelled"], done
        send(ws, type="text", text="Never spoken in the default voice.")
        ignored = recv_json(ws)
        assert ignored["type"] == "error" and "text ignored" in ignored["message"], ignored
