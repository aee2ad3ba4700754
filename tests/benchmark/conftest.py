"""Benchmark fixtures: one real server (Piper and Kokoro on the session's runtime) on loopback ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.server.conftest import _ensure_grpc_code
from tests.server.support import RunningServer, SharedRuntime, server_settings

_ensure_grpc_code()


@pytest.fixture(scope="module")
def bench_server(runtime: object) -> Iterator[RunningServer]:
    running = RunningServer(server_settings(engines=["piper", "kokoro"]), SharedRuntime(runtime))  # type: ignore[arg-type]
    yield running
    running.stop()
