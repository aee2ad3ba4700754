"""A voxserve server in a thread of the calling process, for bench scripts that read its insides
(the admission controller, the runtime, the worker pool) while ``voxserve bench`` loads it."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn

from voxserve.server.app import create_app
from voxserve.server.run import uvicorn_config
from voxserve.settings import Settings


def start_server(port: int) -> tuple[Any, Settings, uvicorn.Server]:
    """Start a server of default settings but the rate limit (off: the load comes from one address) on
    ``port`` (gRPC on the next one); returns the app's state, the settings and the uvicorn server once
    it is ready (as /readyz: after loading and the heap settled)."""
    settings = Settings(_env_file=None, port=port, grpc_port=port + 1, rate_limit_per_minute=0)
    app = create_app(settings)
    state = app.state.vox
    server = uvicorn.Server(uvicorn_config(settings, app, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not state.lifecycle.ready:
        time.sleep(0.2)
    return state, settings, server
