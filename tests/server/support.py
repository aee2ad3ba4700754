"""Test support: a real uvicorn (HTTP + WebSocket + gRPC) on free loopback ports, in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import uvicorn

from voxserve.server.app import create_app
from voxserve.server.run import uvicorn_config
from voxserve.server.runtime_api import RuntimeLike, SessionLike
from voxserve.settings import Settings
from voxserve.types import SchedulerStats, SynthesisParams, VoiceInfo

PIPER = "en_US-joe-medium"
KOKORO = "af_heart"
SHORT = "Hello there, how can I help you today?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RunningServer:
    """uvicorn.Server.run in a daemon thread; ``stop`` shuts it down the normal way."""

    def __init__(self, settings: Settings, runtime: RuntimeLike | None = None, wait_ready: bool = True) -> None:
        # a port from free_port() can be taken by another socket before the server binds it: then the
        # server thread ends at once, and the server is started again on fresh ports
        for attempt in range(3):
            if attempt:
                settings = settings.model_copy(update={"port": free_port(), "grpc_port": free_port()})
            if self._start(settings, runtime):
                break
        else:
            raise RuntimeError("server did not start")
        secure = settings.tls_certfile is not None
        self.verify: str | bool = str(settings.tls_certfile) if secure else True
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
        self.base = f"{'https' if secure else 'http'}://{host}:{settings.port}"
        self.ws = f"{'wss' if secure else 'ws'}://{host}:{settings.port}/v1/tts/stream"
        self.grpc = f"{host}:{settings.grpc_port}"
        if wait_ready:
            self.wait_ready()

    def _start(self, settings: Settings, runtime: RuntimeLike | None) -> bool:
        """Start uvicorn in a thread; False when it ended without starting (its port was taken)."""
        self.settings = settings
        self.app = create_app(settings, runtime)
        self.state = self.app.state.vox
        self.server = uvicorn.Server(uvicorn_config(settings, self.app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive():
                return False
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start within 60 s")
            time.sleep(0.02)
        return True

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while httpx.get(self.base + "/readyz", verify=self.verify).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("server not ready")
            time.sleep(0.1)

    def metric(self, name: str) -> float:
        for line in httpx.get(self.base + "/metrics").text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        raise KeyError(name)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


ServerMaker = Callable[..., "RunningServer"]  # the make_server fixture: settings overrides → a running server


def server_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "engines": ["piper"],
        "default_voice": PIPER,
        "host": "127.0.0.1",
        "port": free_port(),
        "grpc_port": free_port(),
        "rate_limit_per_minute": 0,
        "shutdown_grace_s": 2.0,
    }
    base.update(overrides)
    return Settings(_env_file=None, **base)


class SharedRuntime:
    """Lends the session's runtime to one server without letting that server close it."""

    def __init__(self, runtime: RuntimeLike) -> None:
        self._runtime = runtime

    def load(self) -> None:
        self._runtime.load()

    def voices(self) -> list[VoiceInfo]:
        return self._runtime.voices()

    def open_session(self, params: SynthesisParams, *, pace: bool = True) -> SessionLike:
        return self._runtime.open_session(params, pace=pace)

    def scheduler_stats(self) -> SchedulerStats:
        return self._runtime.scheduler_stats()

    def stream_share(self, engine: str) -> float | None:
        return self._runtime.stream_share(engine)

    def close(self) -> None:
        pass
