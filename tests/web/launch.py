"""Runs the real voxserve app (settings from ``VOXSERVE_*``) for the browser tests, in its own process.

Until the app serves the playground itself, this mounts the package's web directory at ``/``
the way the server should (after the API routes).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.routing import Mount

import voxserve
from voxserve.server.app import create_app
from voxserve.server.run import uvicorn_config
from voxserve.server.state import ServerState
from voxserve.settings import Settings

WEB_DIR = Path(voxserve.__file__).resolve().parent / "web"


def serves_playground(app: FastAPI) -> bool:
    return any(isinstance(route, Mount) and route.path in ("", "/") for route in app.routes)


def main() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    state = ServerState.build(settings)
    app = create_app(settings, state=state)
    if not serves_playground(app):
        app.mount("/", StaticFiles(directory=WEB_DIR, html=True), name="playground")
    import uvicorn

    server = uvicorn.Server(uvicorn_config(settings, app))
    asyncio.run(server.serve())


if __name__ == "__main__":
    main()
