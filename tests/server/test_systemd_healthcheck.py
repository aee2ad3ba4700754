"""deploy/systemd/voxserve-healthcheck, the systemd watchdog's probe, against a real server: it passes
while /healthz answers, finds the port in VOXSERVE_PORT as the unit's environment file sets it, and
speaks HTTPS when the server does, and fails (so that the unit kills the server) when nothing answers
within its window."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .support import RunningServer, ServerMaker, free_port
from .test_tls import self_signed

HELPER = Path(__file__).resolve().parents[2] / "deploy" / "systemd" / "voxserve-healthcheck"

pytestmark = pytest.mark.e2e


def check(*args: str, port: int | None = None, **settings: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("VOXSERVE_")}
    if port is not None:
        env["VOXSERVE_PORT"] = str(port)
    env.update({f"VOXSERVE_{name.upper()}": value for name, value in settings.items()})
    return subprocess.run(
        [sys.executable, str(HELPER), *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_a_live_server_passes(server: RunningServer) -> None:
    assert check("--url", server.base + "/healthz").returncode == 0
    assert check(port=server.settings.port).returncode == 0  # http://127.0.0.1:$VOXSERVE_PORT/healthz


def test_no_answer_within_the_window_fails() -> None:
    port = free_port()  # nothing listens there
    start = time.monotonic()
    result = check("--within", "3", port=port)
    assert result.returncode == 1
    assert f"http://127.0.0.1:{port}/healthz did not answer 200 within 3 s" in result.stderr
    assert time.monotonic() - start >= 2  # it tried again within the window before giving up


def test_a_server_with_tls_in_process_passes(make_server: ServerMaker, tmp_path: Path) -> None:
    """With VOXSERVE_TLS_CERTFILE set (as in the unit's environment file) the probe speaks HTTPS."""
    certfile, keyfile = self_signed(tmp_path)
    server = make_server(tls_certfile=certfile, tls_keyfile=keyfile)
    assert check(port=server.settings.port, tls_certfile=str(certfile)).returncode == 0
    assert check("--within", "1", port=server.settings.port).returncode == 1  # plain HTTP to a TLS port


def test_the_probe_asks_the_address_the_server_listens_on(make_server: ServerMaker) -> None:
    """VOXSERVE_HOST, as the unit's environment file may set it: a server on one address is probed there
    (on loopback it would be refused, and the watchdog would kill a healthy server); one listening on every
    address is probed on loopback."""
    server = make_server(host="127.0.0.2")
    assert check(port=server.settings.port, host="127.0.0.2").returncode == 0
    assert check("--within", "1", port=server.settings.port).returncode == 1  # 127.0.0.1: nothing there
    everywhere = make_server(host="0.0.0.0")
    assert check(port=everywhere.settings.port, host="0.0.0.0").returncode == 0
