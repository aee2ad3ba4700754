"""Benchmark fixtures: one real server (Piper and Kokoro on the session's runtime) on loopback ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.server.conftest import _ensure_grpc_code
from tests.server.support import RunningServer, SharedRuntime, server_settings

from voxserve.runtime import Runtime

_ensure_grpc_code()


@pytest.fixture(scope="module")
def bench_server(runtime: Runtime) -> Iterator[RunningServer]:
    running = RunningServer(server_settings(engines=["piper", "kokoro"]), SharedRuntime(runtime))
    yield running
    running.stop()
