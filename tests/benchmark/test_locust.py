"""bench/locustfile.py, run headless by the real ``locust`` against a real server with an API key for a
few seconds: its first-audio rows (a custom request name) appear in the CSV stats for both kinds of
user, and every request carried the key."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.server.support import RunningServer, SharedRuntime, server_settings

from voxserve.runtime import Runtime

pytestmark = pytest.mark.alone  # the server's admission learns from stalls

ROOT = Path(__file__).resolve().parents[2]


def test_locust_records_first_audio_per_user_kind(runtime: Runtime, tmp_path: Path) -> None:
    keyed = RunningServer(server_settings(engines=["piper", "kokoro"], api_keys=["k1"]), SharedRuntime(runtime))
    command = [sys.executable, "-m", "locust", "-f", str(ROOT / "bench/locustfile.py"), "--headless",
               "-u", "4", "-r", "4", "-t", "8s", "--stop-timeout", "10", "--host", keyed.base,
               "--csv", str(tmp_path / "run"), "--only-summary"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run(command, cwd=tmp_path, env={**env, "VOXSERVE_API_KEY": "k1"}, capture_output=True,
                              text=True, timeout=60)  # fmt: skip
    finally:
        keyed.stop()
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: some request failed (an underrun counts)
    with (tmp_path / "run_stats.csv").open() as f:
        rows = {(row["Type"], row["Name"]): row for row in csv.DictReader(f)}
    for kind, request in (("HTTP", ("POST", "/v1/audio/speech")), ("WS", ("WS", "/v1/tts/stream"))):
        assert int(rows[request]["Request Count"]) > 0 and rows[request]["Failure Count"] == "0", rows[request]
        first = rows[(kind, "first audio")]
        assert int(first["Request Count"]) == int(rows[request]["Request Count"])
        assert 0 < float(first["Median Response Time"]) < 10_000
        assert int(rows[(kind, "playback")]["Request Count"]) == int(first["Request Count"])
