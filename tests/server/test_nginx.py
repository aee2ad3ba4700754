"""deploy/nginx/voxserve.conf with a real nginx in front of two replicas: HTTP, WebSocket and gRPC pass
through, requests spread over both replicas, a replica that is down or full is skipped, and per-client limits
still see the client (X-Forwarded-For from a trusted proxy)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from websockets.sync.client import connect

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

from .audio_util import pcm_rms
from .support import PIPER, SHORT, RunningServer, ServerMaker, free_port
from .test_ws import recv_json, send, utterance

CONF = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "voxserve.conf"
MAIN = """
{user}
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    include {tmp}/voxserve.conf;
}}
"""


class Nginx:
    """nginx in the foreground with the project's config, its replicas' addresses filled in."""

    def __init__(self, tmp: Path, replicas: list[RunningServer]) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        assert Path(binary).exists(), "nginx is missing: make test installs it (scripts/system-deps.sh)"
        self.http_port, self.grpc_port = free_port(), free_port()
        conf = CONF.read_text()
        for n, replica in enumerate(replicas, start=1):
            conf = conf.replace(f"voxserve-{n}:8000", f"127.0.0.1:{replica.settings.port}")
            conf = conf.replace(f"voxserve-{n}:50051", f"127.0.0.1:{replica.settings.grpc_port}")
        conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{self.http_port};")
        conf = conf.replace("listen 8081 http2;", f"listen 127.0.0.1:{self.grpc_port} http2;")
        (tmp / "voxserve.conf").write_text(conf)
        user = "user root;" if os.geteuid() == 0 else ""  # workers must reach this private temp folder
        (tmp / "nginx.conf").write_text(MAIN.format(tmp=tmp, user=user))
        self.process = subprocess.Popen(
            [binary, "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-g", "daemon off;"],
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.http_port), timeout=0.2).close()
                break
            except OSError:
                assert self.process.poll() is None, self.process.communicate()[1].decode()
                assert time.monotonic() < deadline, "nginx did not start"
                time.sleep(0.05)
        self.base = f"http://127.0.0.1:{self.http_port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture()
def balanced(make_server: ServerMaker, tmp_path: Path) -> Iterator[tuple[Nginx, list[RunningServer]]]:
    replicas = [make_server(rate_limit_per_minute=1) for _ in range(2)]
    nginx = Nginx(tmp_path, replicas)
    yield nginx, replicas
    nginx.stop()


def speech_count(replica: RunningServer) -> float:
    text = httpx.get(replica.base + "/metrics").text
    prefix = 'voxserve_requests_total{route="/v1/audio/speech",status="200",transport="http"}'
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


def post(nginx: Nginx, client: str) -> httpx.Response:
    body = {"input": SHORT, "voice": PIPER, "response_format": "pcm"}
    return httpx.post(nginx.base + "/v1/audio/speech", json=body, headers={"X-Forwarded-For": client}, timeout=60)


def test_requests_spread_over_replicas_and_a_down_one_is_skipped(balanced: tuple[Nginx, list[RunningServer]]) -> None:
    nginx, replicas = balanced
    assert httpx.get(nginx.base + "/readyz").status_code == 200
    for n in range(4):  # one request per client: the per-client limit (1 a minute) is not reached
        response = post(nginx, f"203.0.113.{n + 1}")
        assert response.status_code == 200 and pcm_rms(response.content) > 0.01
    assert all(speech_count(replica) >= 1 for replica in replicas)
    replicas[0].stop()
    for n in range(3):
        response = post(nginx, f"203.0.113.{n + 10}")
        assert response.status_code == 200 and pcm_rms(response.content) > 0.01


def test_each_client_has_its_own_limit_behind_the_proxy(balanced: tuple[Nginx, list[RunningServer]]) -> None:
    """Three requests of one client meet two replicas that allow one a minute: one is refused. Another
    client is still served, so the replicas told the clients apart though all came through nginx."""
    nginx, _ = balanced
    statuses = [post(nginx, "198.51.100.1").status_code for _ in range(3)]
    assert statuses.count(429) >= 1 and statuses.count(200) >= 1, statuses
    assert post(nginx, "198.51.100.2").status_code == 200


def test_websocket_and_grpc_pass_through(balanced: tuple[Nginx, list[RunningServer]]) -> None:
    nginx, _ = balanced
    with connect(f"ws://127.0.0.1:{nginx.http_port}/v1/tts/stream") as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        for word in ("Streaming ", "through ", "the ", "proxy."):
            send(ws, type="text", text=word)
        send(ws, type="close")
        chunks, audio, done = utterance(ws)
    assert chunks and not done["cancelled"] and pcm_rms(audio) > 0.01
    channel = grpc.insecure_channel(f"127.0.0.1:{nginx.grpc_port}")
    request = pb.SynthesizeRequest(text=SHORT, voice=PIPER, format="pcm")
    reply = pb_grpc.VoxServeStub(channel).Synthesize(request, timeout=60, metadata=(("x-forwarded-for", "192.0.2.5"),))
    assert reply.sample_rate == 22050 and pcm_rms(reply.audio) > 0.01


def test_a_full_replica_passes_a_speech_request_on(make_server: ServerMaker, tmp_path: Path) -> None:
    """A replica whose one stream slot is taken answers a speech request 503: nginx sends the request to
    the other replica (nginx resends a POST only when told to: ``non_idempotent``), and the caller is served."""
    from .test_ws_contexts import LONG

    full, free = make_server(max_streams=1), make_server()
    nginx = Nginx(tmp_path, [full, free])
    body = {"input": LONG, "voice": PIPER, "response_format": "pcm"}
    try:
        with (
            httpx.Client(timeout=60) as client,
            client.stream("POST", full.base + "/v1/audio/speech", json=body) as held,
        ):
            pieces = held.iter_raw()  # kept: dropping the iterator closes the response
            next(pieces)  # the full replica's only stream is taken while this one plays
            assert httpx.post(full.base + "/v1/audio/speech", json={**body, "input": SHORT}).status_code == 503
            statuses = [post(nginx, f"203.0.113.{n + 20}").status_code for n in range(4)]
        assert statuses == [200] * 4
    finally:
        nginx.stop()
