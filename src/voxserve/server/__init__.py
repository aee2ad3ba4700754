"""The servers: HTTP + WebSocket (FastAPI/uvicorn) and gRPC, over one shared speech service."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voxserve.settings import Settings


def serve(settings: Settings) -> None:
    """Run HTTP, WebSocket and gRPC until SIGTERM/SIGINT (what ``voxserve serve`` calls)."""
    from voxserve.server.run import serve as run_server  # FastAPI, uvicorn and grpc only when serving

    run_server(settings)
