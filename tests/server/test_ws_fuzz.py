"""Protocol fuzzing of the WebSocket: random and adversarial message sequences (wrong order, wrong
types, binary where text is expected, invalid UTF-8 text frames, giant frames, non-JSON, floods of
flush/cancel/close, protocol 2 contexts by any id and more of them than allowed) get only clean answers:
known events and error codes, a clean close code (never 1011), and the server goes on serving: a normal
client speaking alongside the fuzzer gets complete audio of the length it gets alone, never an error (a
refusal because the server is full is asked again, and counted; its first-audio times alone and during
the fuzzing are printed, not asserted)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from voxserve.benchmark.mischief import refused_busy
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


class RawText(bytes):
    """Bytes sent as a text frame: how a client sends invalid UTF-8 where JSON text is expected."""


def _send(ws: ClientConnection, message: str | bytes) -> None:
    if isinstance(message, RawText):
        ws.send(bytes(message), text=True)
    else:
        ws.send(message)


context_ids = st.sampled_from(["a", "b", "c", ""]) | st.text(max_size=140)
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
            "protocol": st.sampled_from([1, 2, 3, "2", None]),
        },
    ).map(lambda d: json.dumps(d, allow_nan=True)),
    # protocol 2: messages naming contexts (after a protocol 2 config, else refused)
    st.builds(
        lambda kind, context, text: json.dumps({"type": kind, "context_id": context, "text": text}),
        st.sampled_from(["text", "flush", "close", "cancel", "config"]),
        context_ids,
        st.text(max_size=20),
    ),
    st.just(json.dumps({"type": "config", "protocol": 2, "voice": PIPER, "format": "pcm"})),
    st.dictionaries(st.text(max_size=6), values, max_size=3).map(json.dumps),
    st.lists(values, max_size=3).map(json.dumps),
    st.binary(max_size=32),
    st.binary(min_size=1, max_size=16).map(lambda raw: RawText(b"\xff" + raw)),  # never valid UTF-8
    # giant frames, past max_ws_message_bytes (64 KiB) but within the socket buffers: a frame of megabytes
    # is cut by the server's close while the client still writes it (a broken pipe, no close code to check)
    st.sampled_from([66_000, 70_000]).map(lambda n: json.dumps({"type": "text", "text": "a" * n})),
    st.text(max_size=30),
)
MANY_CONTEXTS = [json.dumps({"type": "config", "protocol": 2, "voice": PIPER, "format": "pcm"})] + [
    json.dumps({"type": "text", "context_id": f"c{i}", "text": "Hello there. "}) for i in range(12)
]


# (first audio seconds, the utterance's 16-bit PCM) of one normal utterance
Spoken = tuple[float, np.ndarray]
BASELINE_RUNS = 3
RETRY_FOR_S = 60.0
FRAME_LIMIT = 64 * 1024  # max_ws_message_bytes' default
RATE = 22050  # en_US-joe-medium's


class Bystander:
    """A normal client on its own thread, running ``speak`` (one whole utterance, raising on any refusal)
    again and again until the ``with`` block ends; at least once, to its end.

    Before the thread starts, ``speak`` runs alone :data:`BASELINE_RUNS` times: its audio length then is
    what every later utterance must match (within a quarter: Piper's durations are sampled), and its
    first-audio times are compared with those during the fuzzing (printed, never asserted: speed is
    measured by the bench tools)."""

    def __init__(self, name: str, speak: Callable[[], Spoken]) -> None:
        self.name = name
        self._speak = speak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.completed = 0
        self.failures: list[str] = []
        self.before: list[float] = []
        self.during: list[float] = []
        self.length_s = 0.0
        self.refused = 0

    def _check(self, spoken: Spoken) -> float:
        first_s, pcm = spoken
        length_s = len(pcm) / RATE
        if self.length_s and abs(length_s - self.length_s) > self.length_s / 4:
            raise AssertionError(f"{length_s:.2f} s of audio, {self.length_s:.2f} s alone")
        if np.abs(pcm.astype(np.int32)).max() < 1000:
            raise AssertionError("silent audio")
        return first_s

    def _run(self) -> None:
        while True:
            try:
                self.during.append(self._check(self._spoken()))
                self.completed += 1
            except Exception as exc:
                self.failures.append(repr(exc))
            if self._stop.is_set():
                return

    def _spoken(self) -> Spoken:
        """One utterance; a refusal because the server is full (its documented answer to overload, where
        the fuzzer's streams hold its capacity) is asked again after a pause, as a client would."""
        deadline = time.monotonic() + RETRY_FOR_S
        while True:
            try:
                return self._speak()
            except Exception as exc:
                if not refused_busy(repr(exc)) or time.monotonic() > deadline:
                    raise
                self.refused += 1
                time.sleep(0.5)

    def __enter__(self) -> Bystander:
        lengths = []
        for _ in range(BASELINE_RUNS):
            spoken = self._spoken()
            self.before.append(self._check(spoken))
            lengths.append(len(spoken[1]) / RATE)
        self.length_s = float(np.median(lengths))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive(), "the normal client hung"
        assert self.completed >= 1 and not self.failures, (self.completed, self.failures[:3])
        before, during = float(np.median(self.before)), float(np.median(self.during))
        print(
            f"\n{self.name} normal client: first audio P50 {before * 1000:.0f} ms alone ({len(self.before)}), "
            f"{during * 1000:.0f} ms during fuzzing ({len(self.during)} utterances, all complete; "
            f"{self.refused} capacity refusals asked again): ratio {during / before:.2f}"
        )


def _normal_utterance(server: RunningServer) -> Spoken:
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        started = time.perf_counter()
        send(ws, type="text", text=SHORT)
        send(ws, type="close")
        first = recv_json(ws, timeout=60)
        first_s = time.perf_counter() - started
        assert first["type"] == "chunk", first
        audio = ws.recv(timeout=60)
        assert isinstance(audio, bytes)
        chunks, rest, done = utterance(ws, timeout=60)
        assert not done["cancelled"] and done["chunks"] == len(chunks) + 1, done
        return first_s, np.frombuffer(audio + rest, dtype=np.int16)


@pytest.fixture()
def bystander(server: RunningServer) -> Iterator[Bystander]:
    """A normal WebSocket client speaking throughout the test; its failures fail the test."""
    with Bystander("WebSocket", lambda: _normal_utterance(server)) as running:
        yield running


@given(sequence=st.lists(messages, max_size=12))
@settings(  # ci: 10 examples; VOXSERVE_FUZZ=long: 666. The bystander spans all examples, on purpose.
    max_examples=max(10, settings().max_examples // 3),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@example(sequence=[json.dumps({"type": "close"})] * 30 + [json.dumps({"type": "cancel"})] * 30)
@example(sequence=[b"\x00\x01", '{"type": "config", "speed": NaN}', '{"type": "text", "text": "' + "1" * 400 + '"}'])
@example(sequence=MANY_CONTEXTS)
@example(sequence=[RawText(b'{"type": "text", "text": "\xc3\x28"}')])
def test_any_message_sequence_gets_clean_answers(
    server: RunningServer, bystander: Bystander, sequence: list[str | bytes]
) -> None:
    try:
        with connect(server.ws) as ws:
            for message in sequence:
                _send(ws, message)
            send(ws, type="ping")
            while (event := recv_json(ws, timeout=60))["type"] != "pong":
                assert event["type"] in KNOWN_EVENTS, event
                if event["type"] == "error":
                    assert event["code"] in KNOWN_CODES and event["code"] != "internal_error", event
    except ConnectionClosed as closed:
        if closed.rcvd is None:
            # the server fails the connection on a frame it cannot take (invalid UTF-8, too big) and
            # closes the socket; a client still writing the next messages then gets a broken pipe and
            # never reads the close frame
            assert any(isinstance(m, RawText) or len(m) > FRAME_LIMIT for m in sequence), closed
            return
        # 1007 invalid UTF-8, 1008 policy (bad message), 1009 too big, 1013 server full: never 1011
        assert closed.rcvd.code in (1000, 1007, 1008, 1009, 1013), closed.rcvd


def test_and_the_server_still_serves(server: RunningServer) -> None:
    _normal_utterance(server)
