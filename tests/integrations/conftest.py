"""Plugin tests: run by tests/server/test_integrations.py with the plugin venv's interpreter (the
frameworks pin versions the main venv cannot hold), against the real server it started."""

from __future__ import annotations

import os

import numpy as np
import pytest

PIPER = "en_US-joe-medium"


@pytest.fixture(scope="session")
def base_url() -> str:
    url = os.environ.get("VOXSERVE_TEST_URL")
    assert url, "VOXSERVE_TEST_URL (a running voxserve server) is not set; run these through test_integrations.py"
    return url


@pytest.fixture(scope="session")
def tight_url() -> str:
    """A server with room for one stream, whose contexts close after a second without text."""
    url = os.environ.get("VOXSERVE_TEST_TIGHT_URL")
    assert url, "VOXSERVE_TEST_TIGHT_URL is not set; run these through test_integrations.py"
    return url


def pcm_rms(audio: bytes) -> float:
    samples = np.frombuffer(audio, dtype=np.int16).astype(np.float32) / 32768.0
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0
