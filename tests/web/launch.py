"""Runs the real voxserve app (settings from ``VOXSERVE_*``) for the browser tests, in its own process."""

from __future__ import annotations

import asyncio

from fastapi import FastAPI
from starlette.routing import Mount

from voxserve.server.app import create_app
from voxserve.server.run import uvicorn_config
from voxserve.server.state import ServerState
from voxserve.settings import Settings


def serves_playground(app: FastAPI) -> bool:
    return any(isinstance(route, Mount) and route.path in ("", "/") for route in app.routes)


def main() -> None:
    settings = Settings(_env_file=None)
    state = ServerState.build(settings)
    app = create_app(settings, state=state)
    assert serves_playground(app), "create_app must mount the playground at /"
    import uvicorn

    server = uvicorn.Server(uvicorn_config(settings, app))
    asyncio.run(server.serve())


if __name__ == "__main__":
    main()
