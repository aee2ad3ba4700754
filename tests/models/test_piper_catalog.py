"""Piper voices on disk and from the catalog: discovery, the Hub layout, and the checksum check."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from voxserve.errors import InvalidInput, ModelError
from voxserve.models.piper_catalog import discover, fetch_voice, repo_paths

VOICE = "de_DE-thorsten-medium"


def test_repo_paths_follow_the_catalog_layout() -> None:
    assert repo_paths(VOICE) == (
        "de/de_DE/thorsten/medium/de_DE-thorsten-medium.onnx",
        "de/de_DE/thorsten/medium/de_DE-thorsten-medium.onnx.json",
    )
    assert repo_paths("en_US-libritts_r-medium")[0] == "en/en_US/libritts_r/medium/en_US-libritts_r-medium.onnx"
    with pytest.raises(InvalidInput, match="not a Piper catalog voice name"):
        repo_paths("thorsten")


def test_discover_pairs_models_with_their_configs(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    for path in ["a/x-voice.onnx", "a/x-voice.onnx.json", "a/b/y-voice.onnx", "a/b/y-voice.onnx.json", "lonely.onnx"]:
        (tmp_path / path).write_bytes(b"0")
    assert [v.voice_id for v in discover(tmp_path, None, tmp_path / "missing")] == ["x-voice", "y-voice"]


class FakeHub:
    """A local folder laid out like the catalog repository, served the way the Hub downloader serves it."""

    def __init__(self, root: Path, files: dict[str, bytes]) -> None:
        self.root = root
        self.asked: list[str] = []
        listing = {
            path: {"size_bytes": len(data), "md5_digest": hashlib.md5(data).hexdigest()} for path, data in files.items()
        }
        for path, data in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        (root / "voices.json").write_text(json.dumps({VOICE: {"files": listing}}))

    def __call__(self, repo: str, path: str, local_dir: Path) -> Path:
        assert repo == "rhasspy/piper-voices"
        self.asked.append(path)
        target = local_dir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.root / path, target)
        return target


def hub(tmp_path: Path) -> FakeHub:
    model, config = repo_paths(VOICE)
    return FakeHub(tmp_path / "hub", {model: b"onnx bytes", config: b'{"audio": {"sample_rate": 22050}}'})


def test_fetch_checks_every_file_against_the_catalog(tmp_path: Path) -> None:
    fake = hub(tmp_path)
    files = fetch_voice(VOICE, tmp_path / "models", fake)
    assert fake.asked == ["voices.json", *repo_paths(VOICE)]
    assert files.model.read_bytes() == b"onnx bytes" and files.config.is_file()
    assert [v.voice_id for v in discover(tmp_path / "models")] == [VOICE]


def test_a_file_that_does_not_match_its_checksum_installs_nothing(tmp_path: Path) -> None:
    fake = hub(tmp_path)
    (fake.root / repo_paths(VOICE)[1]).write_bytes(b'{"audio": {"sample_rate": 16000}}')  # same size, other bytes
    with pytest.raises(ModelError, match=r"does not match the catalog.*nothing was installed"):
        fetch_voice(VOICE, tmp_path / "models", fake)
    assert discover(tmp_path / "models") == []
    with pytest.raises(ModelError, match="no voice 'de_DE-other-medium'"):
        fetch_voice("de_DE-other-medium", tmp_path / "models", fake)
