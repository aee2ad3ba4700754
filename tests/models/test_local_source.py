"""LocalSource (MODEL_PATH) in our cache layout and in the flat layouts other projects ship."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from voxserve.errors import ModelError
from voxserve.models import ModelStore
from voxserve.models.manifest import KOKORO_VOICE_NAMES
from voxserve.models.sources import LocalSource
from voxserve.settings import Settings

SettingsMaker = Callable[..., Settings]


def _link(target: Path, source: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(source)


def _flat_dir(fetched_root: Path, folder: Path, *, npz_voices: bool) -> Path:
    _link(folder / "kokoro-v1.0.int8.onnx", fetched_root / "kokoro/kokoro-v1.0.int8.onnx")
    _link(folder / "en_US-joe-medium.onnx", fetched_root / "piper/en_US-joe-medium.onnx")
    _link(folder / "en_US-joe-medium.onnx.json", fetched_root / "piper/en_US-joe-medium.onnx.json")
    voices = sorted((fetched_root / "kokoro/voices").glob("*.bin"))
    if npz_voices:  # kokoro-onnx's voices-v1.0.bin: one npz, arrays (510, 1, 256) keyed by voice name
        arrays: dict[str, Any] = {path.stem: np.fromfile(path, dtype="<f4").reshape(510, 1, 256) for path in voices}
        with (folder / "voices-v1.0.bin").open("wb") as handle:
            np.savez(handle, **arrays)
    else:
        for path in voices:
            _link(folder / "voices" / path.name, path)
    return folder


def test_local_source_in_cache_layout(fetched_root: Path, tmp_path: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(tmp_path / "cache", model_path=fetched_root, model_sources=["local"]))
    installed = store.fetch(progress=False)
    assert len(installed) == 57 and all(item.ok for item in installed)
    assert store.verify() == []


@pytest.mark.parametrize("npz_voices", [True, False], ids=["voices-npz", "voices-dir"])
def test_local_source_in_flat_layouts(
    fetched_root: Path, tmp_path: Path, make_settings: SettingsMaker, npz_voices: bool
) -> None:
    flat = _flat_dir(fetched_root, tmp_path / "flat", npz_voices=npz_voices)
    store = ModelStore(make_settings(tmp_path / "cache", model_path=flat, model_sources=["local"]))
    installed = store.fetch(progress=False)
    assert len(installed) == 57 and all(item.ok for item in installed)
    assert sorted(path.stem for path in store.kokoro_voices_dir().glob("*.bin")) == list(KOKORO_VOICE_NAMES)
    assert store.kokoro_voice("zf_xiaobei").read_bytes() == (fetched_root / "kokoro/voices/zf_xiaobei.bin").read_bytes()


def test_model_path_alias_is_used(
    fetched_root: Path, tmp_path: Path, make_settings: SettingsMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VOXSERVE_MODEL_PATH", raising=False)
    monkeypatch.setenv("MODEL_PATH", str(fetched_root))
    settings = make_settings(tmp_path / "cache", model_sources=["local"])
    assert settings.model_path == fetched_root
    store = ModelStore(settings)
    assert [type(source) for source in store.sources] == [LocalSource]
    installed = store.fetch(engines=["piper"], progress=False)
    assert sorted(item.name for item in installed) == ["piper-config", "piper-model"]
    assert store.piper_model().read_bytes()[:4] == (fetched_root / "piper/en_US-joe-medium.onnx").read_bytes()[:4]


def test_wrong_file_falls_through_to_next_source(
    fetched_root: Path, tmp_path: Path, make_settings: SettingsMaker
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "en_US-joe-medium.onnx.json").write_text('{"audio": {"sample_rate": 16000}}')
    store = ModelStore(make_settings(tmp_path / "cache", model_sources=["local"]))
    store.sources = [LocalSource(bad), LocalSource(fetched_root)]
    installed = store.fetch(engines=["piper"], progress=False)
    assert sorted(item.name for item in installed) == ["piper-config", "piper-model"]
    assert store.verify(["piper"]) == []


def test_all_sources_failing_reports_each_reason(tmp_path: Path, make_settings: SettingsMaker) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "en_US-joe-medium.onnx.json").write_text("{}")
    store = ModelStore(make_settings(tmp_path / "cache", model_sources=["local"]))
    store.sources = [LocalSource(bad), LocalSource(tmp_path / "nowhere")]
    with pytest.raises(ModelError) as caught:
        store.fetch(engines=["piper"], progress=False)
    message = caught.value.message
    assert "piper/en_US-joe-medium.onnx.json: local: sha256 mismatch" in message
    assert "piper/en_US-joe-medium.onnx: local: not found in" in message
    assert "nowhere does not exist" in message
    assert not (tmp_path / "cache/piper/en_US-joe-medium.onnx.json").exists()
    assert not list((tmp_path / "cache").glob(".staging-*"))
