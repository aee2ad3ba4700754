"""Liveness and readiness while models load (a runtime whose loading we hold back), no synthesis."""

from __future__ import annotations

import gc
import time

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from .fakes import BlockedLoadRuntime
from .support import RunningServer, server_settings


def grpc_health(target: str) -> int:
    with grpc.insecure_channel(target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        return int(stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status)


def test_loading_then_ready() -> None:
    runtime = BlockedLoadRuntime()
    running = RunningServer(server_settings(), runtime, wait_ready=False)
    try:
        assert httpx.get(running.base + "/healthz").status_code == 200
        ready = httpx.get(running.base + "/readyz")
        assert ready.status_code == 503 and ready.json()["status"] == "loading"
        speech = httpx.post(running.base + "/v1/audio/speech", json={"input": "hi", "voice": "fake"})
        assert speech.status_code == 503
        assert speech.json()["error"]["code"] == "not_ready"
        assert int(speech.headers["Retry-After"]) >= 1
        with connect(running.ws) as ws:
            ws.send('{"type": "config", "voice": "fake"}')
            error = ws.recv(timeout=5)
            assert '"not_ready"' in str(error)
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        assert grpc_health(running.grpc) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert running.metric("voxserve_ready") == 0.0

        runtime.release.set()
        running.wait_ready(timeout=10)
        assert running.metric("voxserve_ready") == 1.0
        assert running.metric("voxserve_model_load_seconds") > 0
        deadline = time.monotonic() + 5
        while grpc_health(running.grpc) != health_pb2.HealthCheckResponse.SERVING:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        voices = httpx.get(running.base + "/v1/voices").json()
        assert voices["voices"] == ["fake"]
    finally:
        running.stop()


def test_what_loading_made_is_left_out_of_later_collections() -> None:
    """A full collection walks every tracked object with the interpreter lock held, and no stream moves
    meanwhile: what the models' loading made (the fake's tables here) is frozen once the server is ready,
    so the collections that serving triggers do not walk it."""
    runtime = BlockedLoadRuntime()
    running = RunningServer(server_settings(), runtime, wait_ready=False)
    try:
        runtime.release.set()
        running.wait_ready(timeout=10)
        assert len(runtime.tables) == 1000
        walked = {id(obj) for obj in gc.get_objects()}
        assert id(runtime.tables) not in walked
        assert not any(id(table) in walked for table in runtime.tables)
        assert gc.get_freeze_count() >= 1000
    finally:
        running.stop()
        gc.unfreeze()  # the rest of the test session collects as usual


def test_failed_load_reports_not_ready() -> None:
    runtime = BlockedLoadRuntime(fail=True)
    runtime.release.set()
    running = RunningServer(server_settings(), runtime, wait_ready=False)
    try:
        deadline = time.monotonic() + 10
        while (body := httpx.get(running.base + "/readyz").json())["status"] == "loading":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert (body["status"], body["error"]) == ("failed", "model file is corrupt")
        assert httpx.get(running.base + "/healthz").status_code == 200
    finally:
        running.stop()
