"""Clients that stop reading, vanish or cancel: their stream slot comes back, the metrics say what
happened, and everyone else is served."""

from __future__ import annotations

import io
import json
import socket
import time
from collections.abc import Callable

import grpc
import httpx
import pytest
import soundfile as sf

from voxserve.runtime import Runtime
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc
from voxserve.server.runtime_api import RuntimeLike

from .audio_util import pcm_rms
from .support import PIPER, SHORT, RunningServer, ServerMaker
from .test_ws import recv_json, send


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


LONG = " ".join(["This reading goes on for a long while, so that its audio fills every buffer on the way."] * 60)


def wait_for(condition: Callable[[], object], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.2)


def count(server: RunningServer, transport: str, status: str) -> float:
    text = httpx.get(server.base + "/metrics").text
    key = f'status="{status}",transport="{transport}"'
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if key in line and "requests_total" in line)


def test_an_http_client_that_stops_reading_loses_its_slot(make_server: ServerMaker) -> None:
    server: RunningServer = make_server(max_streams=1, max_queue=0, client_stall_s=1.5)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the server's sends block
    sock.connect(("127.0.0.1", server.settings.port))
    body = json.dumps({"input": LONG, "voice": PIPER, "response_format": "wav", "sample_rate": 48000}).encode()
    head = f"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
    sock.sendall(head.encode() + b"\r\n\r\n" + body)
    assert sock.recv(64).startswith(b"HTTP/1.1 200")  # then it reads nothing more, and stays connected
    try:
        wait_for(lambda: server.metric("voxserve_active_streams") == 0)
        served = httpx.post(server.base + "/v1/audio/speech", json={"input": SHORT, "voice": PIPER}, timeout=30)
        assert served.status_code == 200 and len(served.content) > 10_000
    finally:
        sock.close()


def test_a_grpc_client_that_stops_reading_loses_its_slot(make_server: ServerMaker) -> None:
    server: RunningServer = make_server(max_streams=1, max_queue=0, client_stall_s=1.5)
    options = [("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 16384)]
    with grpc.insecure_channel(server.grpc, options=options) as channel:
        stub = pb_grpc.VoxServeStub(channel)
        stalled = stub.SynthesizeStream(pb.SynthesizeRequest(text=LONG, voice=PIPER, format="pcm", sample_rate=48000))
        next(stalled)  # one chunk, then no more reading
        wait_for(lambda: count(server, "grpc", "ABORTED") == 1)
        assert server.metric("voxserve_active_streams") == 0
        reply = stub.Synthesize(pb.SynthesizeRequest(text=SHORT, voice=PIPER, format="pcm"), timeout=30)
        assert pcm_rms(reply.audio) > 0.01
        stalled.cancel()


def test_cancelled_grpc_calls_are_counted(server: RunningServer) -> None:
    before = count(server, "grpc", "CANCELLED")
    with grpc.insecure_channel(server.grpc) as channel:
        call = pb_grpc.VoxServeStub(channel).SynthesizeStream(pb.SynthesizeRequest(text=LONG, voice=PIPER))
        next(call)
        call.cancel()
    wait_for(lambda: count(server, "grpc", "CANCELLED") == before + 1, timeout=20)


def test_a_vanished_websocket_is_not_counted_as_a_normal_close(server: RunningServer) -> None:
    from websockets.sync.client import connect

    before = count(server, "ws", "1000")
    ws = connect(server.ws)
    send(ws, type="config", voice=PIPER, format="pcm")
    assert recv_json(ws)["type"] == "ready"
    ws.socket.shutdown(socket.SHUT_RDWR)  # gone without a close frame
    ws.socket.close()
    wait_for(lambda: count(server, "ws", "1006") + count(server, "ws", "1005") >= 1, timeout=20)
    assert count(server, "ws", "1000") == before


def test_flac_from_grpc_and_sse_is_a_whole_readable_file(server: RunningServer) -> None:
    with grpc.insecure_channel(server.grpc) as channel:
        reply = pb_grpc.VoxServeStub(channel).Synthesize(pb.SynthesizeRequest(text=SHORT, voice=PIPER, format="flac"))
    audio, rate = sf.read(io.BytesIO(reply.audio))
    assert rate == 22050 and abs(len(audio) / rate - reply.audio_s) < 0.01
    import base64

    body = {"input": SHORT, "voice": PIPER, "response_format": "flac", "stream_format": "sse"}
    response = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    data = b"".join(base64.b64decode(e["audio"]) for e in events if e["type"] == "speech.audio.delta")
    audio, rate = sf.read(io.BytesIO(data))
    assert rate == 22050 and abs(len(audio) / rate - events[-1]["audio_s"]) < 0.01
