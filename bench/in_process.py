"""A voxserve server in a thread of the calling process, for bench scripts that read its insides
(the admission controller, the runtime, the worker pool) while ``voxserve bench`` loads it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import uvicorn

from voxserve.server.app import create_app
from voxserve.server.run import uvicorn_config
from voxserve.settings import Settings


@dataclass(frozen=True)
class InProcessServer:
    """A server started by :func:`start_server`: the app's state, its settings, and how to stop it."""

    state: Any
    settings: Settings
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self, timeout_s: float = 60.0) -> None:
        """Shut the server down and wait for it, as on a signal: the app's lifespan closes the runtime
        (its worker pool and model sessions) before the interpreter exits. Left to the interpreter's
        exit instead, a daemon thread still inside ONNX Runtime could crash the process after the
        script's output was written."""
        self.server.should_exit = True
        self.thread.join(timeout=timeout_s)


def start_server(port: int) -> InProcessServer:
    """Start a server of default settings but the rate limit (off: the load comes from one address) on
    ``port`` (gRPC on the next one); returns once it is ready (as /readyz: after loading and the heap
    settled)."""
    settings = Settings(_env_file=None, port=port, grpc_port=port + 1, rate_limit_per_minute=0)
    app = create_app(settings)
    state = app.state.vox
    server = uvicorn.Server(uvicorn_config(settings, app, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not state.lifecycle.ready:
        time.sleep(0.2)
    return InProcessServer(state, settings, server, thread)
