"""Protocol fuzzing of the WebSocket: random and adversarial message sequences (wrong order, wrong
types, binary where text is expected, non-JSON, floods of flush/cancel/close) get only clean answers:
known events and error codes, a clean close code (never 1011), and the server goes on serving: a normal
client speaking alongside the fuzzer gets its audio, never a refusal."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from voxserve.errors import VoxError
from voxserve.runtime import Runtime
from voxserve.server.runtime_api import RuntimeLike

from .support import PIPER, SHORT, RunningServer
from .test_ws import recv_json, send, utterance


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


KNOWN_EVENTS = {"ready", "chunk", "done", "error", "pong"}


def _codes(cls: type[VoxError]) -> set[str]:
    return {cls.code}.union(*(_codes(sub) for sub in cls.__subclasses__()))


KNOWN_CODES = _codes(VoxError)
values = st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=12)
messages = st.one_of(
    st.sampled_from(["flush", "cancel", "close", "ping", "config", "text", "nope", ""]).map(
        lambda kind: json.dumps({"type": kind})
    ),
    st.text(max_size=40).map(lambda text: json.dumps({"type": "text", "text": text})),
    st.fixed_dictionaries(
        {"type": st.just("config")},
        optional={
            "voice": values,
            "speed": values,
            "format": values,
            "sample_rate": values,
            "lang": values,
            "word_timings": values,
        },
    ).map(lambda d: json.dumps(d, allow_nan=True)),
    st.dictionaries(st.text(max_size=6), values, max_size=3).map(json.dumps),
    st.lists(values, max_size=3).map(json.dumps),
    st.binary(max_size=32),
    st.text(max_size=30),
)


class Bystander:
    """A normal client on its own thread, running ``speak`` (one whole utterance, raising on any refusal
    or missing audio) again and again until the ``with`` block ends; at least once, to its end."""

    def __init__(self, speak: Callable[[], None]) -> None:
        self._speak = speak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.completed = 0
        self.failures: list[str] = []

    def _run(self) -> None:
        while True:
            try:
                self._speak()
                self.completed += 1
            except Exception as exc:
                self.failures.append(repr(exc))
            if self._stop.is_set():
                return

    def __enter__(self) -> Bystander:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive(), "the normal client hung"
        assert self.completed >= 1 and not self.failures, (self.completed, self.failures[:3])


def _normal_utterance(server: RunningServer) -> None:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text=SHORT)
        send(ws, type="close")
        chunks, audio, _ = utterance(ws, timeout=60)
        assert chunks and len(audio) > 10_000


@pytest.fixture()
def bystander(server: RunningServer) -> Iterator[Bystander]:
    """A normal WebSocket client speaking throughout the test; its failures fail the test."""
    with Bystander(lambda: _normal_utterance(server)) as running:
        yield running


@given(sequence=st.lists(messages, max_size=12))
@settings(  # ci: 10 examples; VOXSERVE_FUZZ=long: 666. The bystander spans all examples, on purpose.
    max_examples=max(10, settings().max_examples // 3),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@example(sequence=[json.dumps({"type": "close"})] * 30 + [json.dumps({"type": "cancel"})] * 30)
@example(sequence=[b"\x00\x01", '{"type": "config", "speed": NaN}', '{"type": "text", "text": "' + "1" * 400 + '"}'])
def test_any_message_sequence_gets_clean_answers(
    server: RunningServer, bystander: Bystander, sequence: list[str | bytes]
) -> None:
    try:
        with connect(server.ws) as ws:
            for message in sequence:
                ws.send(message)
            send(ws, type="ping")
            while (event := recv_json(ws, timeout=60))["type"] != "pong":
                assert event["type"] in KNOWN_EVENTS, event
                if event["type"] == "error":
                    assert event["code"] in KNOWN_CODES and event["code"] != "internal_error", event
    except ConnectionClosed as closed:
        assert closed.rcvd is not None and closed.rcvd.code in (1000, 1008, 1009), closed.rcvd


def test_and_the_server_still_serves(server: RunningServer) -> None:
    _normal_utterance(server)
