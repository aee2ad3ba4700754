"""Server fixtures: one loaded runtime for the session, servers on free loopback ports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from voxserve.server.runtime_api import RuntimeLike

from .support import RunningServer, ServerMaker, SharedRuntime, server_settings


def _ensure_grpc_code() -> None:
    """The generated gRPC modules are build output (setup.py); make them if this checkout lacks them."""
    root = Path(__file__).resolve().parents[2]
    if (root / "src/voxserve/server/grpc_gen/voxserve_pb2_grpc.py").exists():
        return
    import runpy
    from unittest import mock

    import setuptools

    with mock.patch.object(setuptools, "setup"):
        runpy.run_path(str(root / "setup.py"))["generate_grpc"]()


_ensure_grpc_code()  # before any test module imports voxserve.server.grpc_gen


@pytest.fixture(scope="session")
def shared_runtime(runtime: RuntimeLike) -> RuntimeLike:
    """The session's loaded runtime (tests/conftest.py: Kokoro + Piper), lent to every server."""
    return runtime


@pytest.fixture(scope="module")
def server(shared_runtime: RuntimeLike) -> Iterator[RunningServer]:
    """A server with default settings (auth off, generous limits)."""
    running = RunningServer(server_settings(), SharedRuntime(shared_runtime))
    yield running
    running.stop()


@pytest.fixture()
def make_server(shared_runtime: RuntimeLike) -> Iterator[ServerMaker]:
    """Factory for servers with specific settings; all are stopped at the end of the test."""
    started: list[RunningServer] = []

    def make(**overrides: object) -> RunningServer:
        running = RunningServer(server_settings(**overrides), SharedRuntime(shared_runtime))
        started.append(running)
        return running

    yield make
    for running in started:
        running.stop()
