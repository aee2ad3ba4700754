"""The framework plugins (LiveKit Agents, Pipecat) against this real server over loopback.

Their tests, in tests/integrations, need the frameworks, which pin versions the main venv cannot hold:
they run with the interpreter of .venv-plugins (``make plugins-venv``, part of ``make test``; or
``VOXSERVE_PLUGIN_PYTHON``), voxserve taken from src/."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .support import RunningServer, ServerMaker

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_PYTHON = Path(os.environ.get("VOXSERVE_PLUGIN_PYTHON", str(ROOT / ".venv-plugins" / "bin" / "python")))

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("module", ["test_livekit.py", "test_pipecat.py"])
def test_framework_plugin(server: RunningServer, make_server: ServerMaker, module: str) -> None:
    """``VOXSERVE_TEST_TIGHT_URL``: a server with room for one stream that closes a context after a second
    without text, for the plugins' handling of a full server and of a pause in an LLM's text."""
    assert PLUGIN_PYTHON.exists(), f"{PLUGIN_PYTHON} is missing: `make plugins-venv` builds it (`make test` does)"
    tight = make_server(max_streams=1, context_idle_s=1.0, rate_limit_per_minute=0)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "VOXSERVE_TEST_URL": server.base}
    env["VOXSERVE_TEST_TIGHT_URL"] = tight.base
    command = [str(PLUGIN_PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["--confcutdir", "tests/integrations", f"tests/integrations/{module}"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
