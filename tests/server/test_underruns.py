"""The server counts each stream's underruns (its listener, playing from the first audio in real time,
running dry) and reports them in ``done``, the SSE end event, the gRPC trailer and /metrics.

The sessions are scripted (tests/server/fakes.py): a stream falls behind on cue, which real models on a
quiet machine don't do. The last test runs real Piper: a client whose text pauses is no stall.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from websockets.sync.client import connect

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

from .fakes import ScriptedRuntime
from .support import PIPER, RunningServer, ServerMaker, server_settings

LATE = [(0.0, 0.2), (0.5, 0.3), (0.0, 0.3)]  # 0.2 s plays out, the next arrives 0.5 s later: ~0.3 s dry
IN_TIME = [(0.0, 0.6), (0.1, 0.3), (0.1, 0.3)]


def _serve(script: list[tuple[float, float]]) -> RunningServer:
    return RunningServer(server_settings(default_voice="fake", engines=["piper"]), ScriptedRuntime(script))


def _ws_done(running: RunningServer) -> dict[str, object]:
    with connect(running.ws) as ws:
        ws.send(json.dumps({"type": "config", "voice": "fake", "format": "pcm"}))
        ws.send(json.dumps({"type": "text", "text": "hello"}))
        ws.send(json.dumps({"type": "close"}))
        while True:
            message = ws.recv(timeout=10)
            if isinstance(message, str) and json.loads(message)["type"] == "done":
                return json.loads(message)


def test_a_late_chunk_is_reported_everywhere() -> None:
    running = _serve(LATE)
    try:
        done = _ws_done(running)
        assert done["stalls"] == 1
        assert done["stall_s"] == pytest.approx(0.3, abs=0.12)

        events = httpx.post(
            running.base + "/v1/audio/speech",
            json={"input": "hello", "voice": "fake", "response_format": "pcm", "stream_format": "sse"},
            timeout=10,
        ).text
        end = json.loads(next(line for line in events.splitlines() if "speech.audio.done" in line)[6:])
        assert end["stall_s"] == pytest.approx(0.3, abs=0.12) and end["stalls"] == 1

        stub = pb_grpc.VoxServeStub(grpc.insecure_channel(running.grpc))
        call = stub.SynthesizeStream(pb.SynthesizeRequest(text="hello", voice="fake", format="pcm"), timeout=10)
        assert len(list(call)) == 3
        trailer = dict(call.trailing_metadata() or ())
        assert float(trailer["voxserve-stall-s"]) == pytest.approx(0.3, abs=0.12)
        assert trailer["voxserve-stalls"] == "1"

        metrics = httpx.get(running.base + "/metrics").text
        for transport in ("ws", "http", "grpc"):
            assert f'voxserve_stalled_streams_total{{engine="fake",transport="{transport}"}} 1.0' in metrics
        assert running.metric("voxserve_stall_seconds_count") >= 1
    finally:
        running.stop()


def test_audio_ahead_of_the_listener_is_no_stall() -> None:
    running = _serve(IN_TIME)
    try:
        done = _ws_done(running)
        assert done["stalls"] == 0 and done["stall_s"] == 0.0
        metrics = httpx.get(running.base + "/metrics").text
        assert 'voxserve_stalled_streams_total{engine="fake",transport="ws"} 0.0' in metrics
        assert 'voxserve_stall_seconds_bucket{engine="fake",le="0.0",transport="ws"} 1.0' in metrics
    finally:
        running.stop()


def test_a_stall_lowers_admissions_limit_at_once_not_when_the_stream_ends() -> None:
    # the listener runs dry after 0.2 s; the stream then goes on for 1.5 s more before its last chunk
    running = _serve([(0.0, 0.2), (0.5, 0.3), (1.5, 0.3)])
    admission = running.state.admission
    try:
        full = admission.limit
        with _speech(running) as response:
            list(_through_the_stall(response))
        assert admission.limit == full  # alone, it had the cores to itself: fewer streams would not help
        with connect(running.ws) as beside:  # a second stream, booked while it has text and is not closed
            beside.send(json.dumps({"type": "config", "voice": "fake", "format": "pcm"}))
            beside.send(json.dumps({"type": "text", "text": "hello"}))
            while admission.active < 1:
                time.sleep(0.01)
            with _speech(running) as response:
                chunks = _through_the_stall(response)
                assert admission.active == 2  # the stream is still playing
                assert admission.limit == pytest.approx(full - admission.share(None))  # one stream fewer
                assert running.metric("voxserve_admission_limit") == pytest.approx(admission.limit)  # exported
                list(chunks)
            assert admission.limit == pytest.approx(full - admission.share(None))  # its end does not count it again
    finally:
        running.stop()


def _speech(running: RunningServer) -> contextlib.AbstractContextManager[httpx.Response]:
    return httpx.stream(
        "POST",
        running.base + "/v1/audio/speech",
        json={"input": "hello", "voice": "fake", "response_format": "pcm"},
        timeout=10,
    )


def _through_the_stall(response: httpx.Response) -> Iterator[bytes]:
    """Read ``response`` through its late chunk (the stall is counted as it arrives); returns the rest."""
    chunks, received = response.iter_bytes(), 0
    while received < 0.5 * 16_000 * 2:
        received += len(next(chunks))
    return chunks


def test_a_listener_waiting_for_the_clients_text_is_no_stall(make_server: ServerMaker) -> None:
    """A voice agent's LLM pauses for longer than the audio already sent: the listener runs dry waiting
    for the client's text. That is not the server's underrun, and counting it would lower the admission
    limit for other callers; playback starts again with the next text's audio."""
    running = make_server()
    with connect(running.ws) as ws:
        ws.send(json.dumps({"type": "config", "voice": PIPER, "format": "pcm"}))
        ws.send(json.dumps({"type": "text", "text": "Hello there."}))
        ws.send(json.dumps({"type": "flush"}))
        first_s, timeout = 0.0, 30.0
        with contextlib.suppress(TimeoutError):  # the flushed sentence, until nothing more comes
            while True:
                message = json.loads(ws.recv(timeout=timeout))
                if message["type"] == "chunk":
                    assert isinstance(ws.recv(timeout=5), bytes)
                    first_s, timeout = first_s + message["duration_s"], 1.0
        assert first_s > 0.3
        time.sleep(first_s + 0.5)  # the listener has played it all and waits
        ws.send(json.dumps({"type": "text", "text": "I was thinking about your question."}))
        ws.send(json.dumps({"type": "close"}))
        while (message := json.loads(ws.recv(timeout=30)))["type"] != "done":
            if message["type"] == "chunk":
                ws.recv(timeout=5)
    assert message["audio_s"] > first_s + 0.5  # the second sentence was spoken
    assert message["stalls"] == 0 and message["stall_s"] == 0.0
    assert (
        'voxserve_stalled_streams_total{engine="piper",transport="ws"} 1.0'
        not in httpx.get(running.base + "/metrics").text
    )


def test_a_first_audio_the_pool_refuses_is_a_503_at_capacity_and_lowers_the_admission_limit() -> None:
    """The worker pool refuses a new stream whose first audio would take a core a thin playing stream
    needs (``stream/sharing.py``: ``_overstayed``). Its listener gets what admission's own refusal
    gives (503, at capacity, Retry-After), the playing stream plays on, and admission learns that it let
    in one stream too many, as from a stall: the next such stream is refused at once."""
    from voxserve.errors import Overloaded
    from voxserve.stream.pool import REFUSED

    long_play = [(0.0, 0.5)] + [(0.1, 0.1)] * 15  # about two seconds of a stream that keeps ahead
    runtime = ScriptedRuntime(long_play, refuse={1: Overloaded(REFUSED, retry_after_s=1.0)})
    running = RunningServer(server_settings(default_voice="fake", engines=["piper"]), runtime)
    try:
        body = {"input": "hello", "voice": "fake", "response_format": "pcm", "stream_format": "sse"}
        limit = running.state.admission.limit
        with (
            httpx.Client(timeout=10) as client,
            client.stream("POST", running.base + "/v1/audio/speech", json=body) as playing,
        ):
            assert playing.status_code == 200
            refused = client.post(running.base + "/v1/audio/speech", json=body)
            assert refused.status_code == 503 and refused.headers["retry-after"]
            assert "at capacity" in refused.json()["error"]["message"]
            assert running.state.admission.limit < limit
            ended = [line for line in playing.iter_lines() if "speech.audio.done" in line]
        assert json.loads(ended[0][6:])["stall_s"] == 0.0  # the playing stream was not touched
    finally:
        running.stop()
