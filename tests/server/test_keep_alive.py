"""An idle keep-alive connection is closed after ``keep_alive_s``, and by default only after the common
HTTP clients stop reusing one themselves.

A client that reuses an idle connection at the moment the server closes it gets no response: its
request fails as a read error, not an HTTP status, and nothing retries a POST. The load bench met it
against uvicorn's 5 s, the same as httpx's own expiry (docs/benchmarks.md, stop 69)."""

from __future__ import annotations

import http.client
import time

import httpx

from voxserve.settings import Settings

from .fakes import ScriptedRuntime
from .support import RunningServer, server_settings


def test_the_default_outlasts_httpxs_own_idle_expiry() -> None:
    expiry = httpx.Limits(max_connections=None).keepalive_expiry
    assert expiry is not None and Settings(_env_file=None).keep_alive_s > expiry


def test_an_idle_connection_is_closed_after_keep_alive_s() -> None:
    running = RunningServer(server_settings(default_voice="fake", keep_alive_s=1.0), ScriptedRuntime([]))
    try:
        connection = http.client.HTTPConnection("127.0.0.1", running.settings.port, timeout=10)
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        assert response.status == 200 and response.getheader("connection") != "close"
        response.read()
        idle_since = time.monotonic()
        assert connection.sock is not None
        connection.sock.settimeout(5)
        assert connection.sock.recv(1) == b""  # the server closed it, with nothing more sent
        assert 0.8 <= time.monotonic() - idle_since < 4.0
        connection.close()
    finally:
        running.stop()
