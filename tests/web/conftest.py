"""Browser fixtures: Debian's Chromium driven by Playwright, and real voxserve servers in subprocesses."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
LAUNCHER = Path(__file__).resolve().parent / "launch.py"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
]
READY_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServerProcess:
    """One real voxserve server (HTTP + WebSocket + the playground) on a free loopback port."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        fixed = {"VOXSERVE_HOST": "127.0.0.1", "VOXSERVE_PORT": str(self.port), "VOXSERVE_GRPC_PORT": "0"}
        full = {**os.environ, "VOXSERVE_API_KEYS": "[]", **env, **fixed}
        self._log = log.open("wb")
        cmd = [sys.executable, str(LAUNCHER)]
        self.proc = subprocess.Popen(cmd, env=full, stdout=self._log, stderr=self._log)
        self.log_path = log

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"server not ready after {READY_TIMEOUT_S} s:\n{self.log_path.read_text()[-3000:]}")

    def stop(self) -> None:
        if self._log.closed:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def start_server(tmp: Path, name: str, **env: str) -> ServerProcess:
    server = ServerProcess(env, tmp / f"{name}.log")
    server.wait_ready()
    return server


@pytest.fixture()
def launch(tmp_path: Path, model_store: object) -> Iterator[Callable[..., ServerProcess]]:
    """Start an extra server with the given ``VOXSERVE_*`` settings; stopped at the end of the test."""
    started: list[ServerProcess] = []

    def _launch(name: str, **env: str) -> ServerProcess:
        started.append(start_server(tmp_path, name, **env))
        return started[-1]

    yield _launch
    for proc in started:
        proc.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    from playwright import sync_api

    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed: run 'make system-deps' (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, model_store: object) -> Iterator[ServerProcess]:
    """Both engines (voices in several languages), no authentication."""
    proc = start_server(tmp_path_factory.mktemp("web"), "server", VOXSERVE_ENGINES='["piper","kokoro"]')
    yield proc
    proc.stop()


@pytest.fixture()
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"
