"""The registry route end to end: every manifest file installed, intact and usable."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from voxserve.models import InstalledFile, ModelStore, manifest
from voxserve.models.kokoro_variant import looks_like_kokoro
from voxserve.models.manifest import KOKORO_VOICE_NAMES
from voxserve.settings import Settings

SettingsMaker = Callable[..., Settings]


def test_registry_fetch_installs_every_manifest_file(registry_fetch: tuple[Path, list[InstalledFile], float]) -> None:
    root, installed, seconds = registry_fetch
    expected = {item.name: item for item in manifest()}
    assert len(expected) == 57
    assert {item.name for item in installed} == set(expected)
    for item in installed:
        assert item.ok, item
        assert item.sha256 == expected[item.name].sha256
        assert item.size == expected[item.name].size
        assert item.path.is_relative_to(root)
    assert seconds < 120
    assert not list(root.glob(".staging-*")), "staging directory left behind"


def test_accessors_return_usable_files(fetched_root: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(fetched_root))
    assert store.verify() == []
    assert looks_like_kokoro(store.kokoro_model()) is None
    voices = store.kokoro_voices_dir()
    assert sorted(path.stem for path in voices.glob("*.bin")) == list(KOKORO_VOICE_NAMES)
    style = np.fromfile(store.kokoro_voice("af_heart"), dtype="<f4").reshape(510, 1, 256)
    assert np.isfinite(style).all() and float(np.abs(style).max()) > 0.01
    config = json.loads(store.piper_config().read_text())
    assert config["audio"]["sample_rate"] == 22050
    assert store.piper_model().stat().st_size == 63_201_294


def test_second_fetch_is_fast_and_downloads_nothing(fetched_root: Path, make_settings: SettingsMaker) -> None:
    before = {path: path.stat().st_mtime_ns for path in fetched_root.rglob("*") if path.is_file()}
    store = ModelStore(make_settings(fetched_root, model_sources=["registry"]))
    start = time.perf_counter()
    again = store.fetch(progress=False)
    elapsed = time.perf_counter() - start
    assert again == []
    assert elapsed < 2.0, elapsed
    after = {path: path.stat().st_mtime_ns for path in fetched_root.rglob("*") if path.is_file()}
    assert after == before
