"""Every client bounded: slow headers and bodies time out, oversized heads are refused, one address
holds at most max_connections_per_client connections, a flood past the rate limit is refused without
opening a synthesis session, and afterwards threads, fds and memory are back near their baseline."""

from __future__ import annotations

import gc
import queue
import socket
import threading
import time
from collections.abc import Iterator

import grpc
import httpx
import psutil
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc
from voxserve.server.runtime_api import RuntimeLike, SessionLike
from voxserve.types import SynthesisParams

from .support import PIPER, RunningServer, ServerMaker, SharedRuntime, server_settings
from .test_ws import recv_json, send

pytestmark = [pytest.mark.e2e, pytest.mark.alone]  # rate limits and timeouts are counted in real time


class CountingRuntime(SharedRuntime):
    def __init__(self, runtime: RuntimeLike) -> None:
        super().__init__(runtime)
        self.sessions = 0

    def open_session(self, params: SynthesisParams, *, pace: bool = True) -> SessionLike:
        self.sessions += 1
        return super().open_session(params, pace=pace)


@pytest.fixture()
def bounded(shared_runtime: RuntimeLike) -> Iterator[tuple[RunningServer, CountingRuntime]]:
    runtime = CountingRuntime(shared_runtime)
    settings = server_settings(
        header_timeout_s=1.0, body_timeout_s=1.0, max_connections_per_client=3, rate_limit_per_minute=6
    )
    running = RunningServer(settings, runtime)
    yield running, runtime
    running.stop()


def _raw(server: RunningServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.settings.port), timeout=10)
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sent before closing; fails if it is still open after ``seconds``."""
    sock.settimeout(seconds)
    got = b""
    try:
        while chunk := sock.recv(4096):
            got += chunk
    except TimeoutError:
        pytest.fail(f"still open after {seconds} s")
    return got


def _usage() -> tuple[int, int, float]:
    gc.collect()
    me = psutil.Process()
    return me.num_threads(), me.num_fds(), me.memory_info().rss / 1e6


def test_every_client_is_bounded(bounded: tuple[RunningServer, CountingRuntime]) -> None:
    server, runtime = bounded
    assert httpx.get(server.base + "/healthz").status_code == 200
    threads0, fds0, rss0 = _usage()

    # slowloris: a request head trickled a byte at a time is cut off after header_timeout_s
    slow = _raw(server)
    slow.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()

    def trickle() -> None:
        for ch in b"X-Slow: " + b"a" * 40:
            try:
                slow.send(bytes([ch]))
            except OSError:
                return
            time.sleep(0.2)

    threading.Thread(target=trickle, daemon=True).start()
    assert _closed_within(slow, 5) == b"" and time.monotonic() - started < 4
    slow.close()
    silent = _raw(server)  # a connection that never sends a byte
    assert _closed_within(silent, 5) == b""
    silent.close()

    # a slow body: 408 once a part is late
    body = _raw(server)
    body.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
    body.sendall(b'Content-Length: 200\r\n\r\n{"input": ')
    # the 408 comes after the 1 s body timeout, and the connection closes with it: what the client sends
    # next would be the rest of the body, so it cannot carry another request (kept open, it would wait
    # for that body until the keep-alive timeout, 15 s)
    started = time.monotonic()
    answer = _closed_within(body, 8)
    assert answer.startswith(b"HTTP/1.1 408") and b"connection: close" in answer.lower()
    assert time.monotonic() - started < 5
    body.close()

    # an oversized head
    huge = httpx.get(server.base + "/healthz", headers={"X-Big": "a" * 40_000})
    assert huge.status_code == 431

    # at most 3 connections open from one address: the 4th WebSocket is closed 4029, an HTTP request 429
    held = [connect(server.ws) for _ in range(3)]
    try:
        time.sleep(1.5)  # past header_timeout_s: the head deadline must not cut an upgraded WebSocket
        for ws in held:
            send(ws, type="ping")
            assert recv_json(ws)["type"] == "pong"
        with connect(server.ws) as extra, pytest.raises(ConnectionClosed) as closed:
            extra.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4029
        refused = httpx.get(server.base + "/v1/models")
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
        # a health probe or a scrape from the same address still reads the server's state
        assert httpx.get(server.base + "/readyz").status_code == 200
        assert httpx.get(server.base + "/healthz").status_code == 200
        assert httpx.get(server.base + "/metrics").status_code == 200
    finally:
        for ws in held:
            ws.close()
    # counted like every other close, though the WebSocket route never saw it
    assert server.metric('voxserve_requests_total{route="/v1/tts/stream",status="4029",transport="ws"}') == 1

    # a flood past the rate limit: refused with 429, and no synthesis session is opened for it
    replies = [
        httpx.post(server.base + "/v1/audio/speech", json={"input": "Hi.", "voice": PIPER}, timeout=30).status_code
        for _ in range(15)
    ]
    accepted = replies.count(200)
    assert 1 <= accepted <= 6 and replies.count(429) == 15 - accepted
    assert runtime.sessions == accepted

    # afterwards: threads, fds and memory back near the baseline
    time.sleep(1.0)
    threads1, fds1, rss1 = _usage()
    assert threads1 <= threads0 + 2, (threads0, threads1)
    assert fds1 <= fds0 + 4, (fds0, fds1)
    assert rss1 <= rss0 + 60, (rss0, rss1)


def test_grpc_calls_in_flight_are_capped_per_client(make_server: ServerMaker) -> None:
    """max_connections_per_client bounds one address's gRPC calls in flight too: the call past the cap
    ends with RESOURCE_EXHAUSTED and a message naming the cap; once a call ends, a new one is served."""
    server: RunningServer = make_server(max_connections_per_client=2)
    releases: list[queue.Queue[None]] = []

    def open_duplex(stub: pb_grpc.VoxServeStub) -> grpc.Future:
        release: queue.Queue[None] = queue.Queue()
        releases.append(release)

        def requests() -> Iterator[pb.StreamRequest]:
            yield pb.StreamRequest(config=pb.StreamConfig(voice=PIPER, format="pcm"))
            release.get(timeout=60)  # the call stays open, idle, until released

        call = stub.StreamingSynthesize(requests(), timeout=60)
        assert next(call).WhichOneof("kind") == "ready"
        return call

    with grpc.insecure_channel(server.grpc) as channel:
        stub = pb_grpc.VoxServeStub(channel)
        held = [open_duplex(stub), open_duplex(stub)]
        try:
            with pytest.raises(grpc.RpcError) as refused:
                stub.Synthesize(pb.SynthesizeRequest(text="Hi.", voice=PIPER), timeout=30)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert refused.value.details() == "more than 2 calls open from this client"
            assert httpx.get(server.base + "/v1/models").status_code == 200  # HTTP counts its own connections
        finally:
            for call in held:
                call.cancel()
            for release in releases:
                release.put(None)
        deadline = time.monotonic() + 10
        while True:  # the cancelled calls' slots are given back once the server has seen them end
            try:
                reply = stub.Synthesize(pb.SynthesizeRequest(text="Hi.", voice=PIPER, format="pcm"), timeout=30)
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
                time.sleep(0.2)
        assert reply.audio
