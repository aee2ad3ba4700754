"""Piper voices beyond the one we ship: found on disk, or fetched from the Piper catalog.

Any ``<voice>.onnx`` with a ``<voice>.onnx.json`` beside it under ``MODEL_PATH`` (or under the cache's
``piper-voices`` folder, where ``voxserve models fetch piper:<voice>`` puts them) is a voice. The
catalog on the Hugging Face Hub (``rhasspy/piper-voices``) lays a voice named
``<lang>_<REGION>-<name>-<quality>`` out as ``<lang>/<lang>_<REGION>/<name>/<quality>/<voice>.onnx``
(+ ``.onnx.json``) and lists every file's size and MD5 in ``voices.json``; a fetched file must match
both before it is moved into place.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from voxserve.errors import InvalidInput, ModelError
from voxserve.models.hf_source import PIPER_REPO, load_downloader
from voxserve.settings import Settings

log = logging.getLogger(__name__)

CATALOG_FILE = "voices.json"
FETCHED_DIR = "piper-voices"
_VOICE_NAME = re.compile(r"(?P<lang>[a-z]{2,3})_(?P<region>[A-Z]{2})-(?P<name>[A-Za-z0-9_]+)-(?P<quality>[a-z_]+)")

# (repo id, path in the repo, local directory) → local path of the downloaded file
Download = Callable[[str, str, Path], Path]


@dataclass(frozen=True)
class PiperVoiceFiles:
    """A voice's model and config on disk."""

    voice_id: str
    model: Path
    config: Path


def discover(*roots: Path | None) -> list[PiperVoiceFiles]:
    """Every ``.onnx`` + ``.onnx.json`` pair under ``roots`` (first found wins for a name), sorted by name."""
    found: dict[str, PiperVoiceFiles] = {}
    for root in roots:
        if root is None or not Path(root).is_dir():
            continue
        for model in sorted(Path(root).rglob("*.onnx")):
            config = model.with_name(model.name + ".json")
            if config.is_file():
                found.setdefault(model.stem, PiperVoiceFiles(model.stem, model, config))
    return [found[name] for name in sorted(found)]


def search_roots(settings: Settings) -> list[Path]:
    """Where voices are looked for: ``MODEL_PATH`` (when set) and the cache's fetched voices."""
    roots = [settings.cache_dir / FETCHED_DIR]
    if settings.model_path is not None:
        roots.insert(0, Path(settings.model_path).expanduser())
    return roots


def repo_paths(voice: str) -> tuple[str, str]:
    """Paths of ``voice``'s model and config in the catalog repository."""
    match = _VOICE_NAME.fullmatch(voice)
    if match is None:
        raise InvalidInput(
            f"{voice!r} is not a Piper catalog voice name; they look like de_DE-thorsten-medium "
            "(<lang>_<REGION>-<name>-<quality>)"
        )
    folder = f"{match['lang']}/{match['lang']}_{match['region']}/{match['name']}/{match['quality']}"
    return f"{folder}/{voice}.onnx", f"{folder}/{voice}.onnx.json"


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _expected(catalog: dict[str, object], voice: str, path: str) -> tuple[int, str]:
    try:
        entry = catalog[voice]["files"][path]  # type: ignore[index]
        return int(entry["size_bytes"]), str(entry["md5_digest"])
    except (KeyError, TypeError, ValueError):
        raise ModelError(f"the Piper catalog lists no file {path} for voice {voice!r}") from None


def fetch_voice(voice: str, target_root: Path, download: Download, repo: str = PIPER_REPO) -> PiperVoiceFiles:
    """Download ``voice`` from the catalog into ``target_root/<voice>/``, each file checked against the
    size and MD5 the catalog lists; nothing is moved into place unless both files match."""
    model_path, config_path = repo_paths(voice)
    target = target_root / voice
    target_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".piper-fetch-", dir=target_root) as scratch:
        work = Path(scratch)
        try:
            catalog = json.loads(download(repo, CATALOG_FILE, work).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot read the Piper catalog {repo}/{CATALOG_FILE}: {exc}") from exc
        if voice not in catalog:
            raise ModelError(f"the Piper catalog {repo} has no voice {voice!r}")
        staged: list[Path] = []
        for path in (model_path, config_path):
            size, md5 = _expected(catalog, voice, path)
            try:
                fetched = download(repo, path, work)
            except OSError as exc:
                raise ModelError(f"{repo}/{path}: {type(exc).__name__}: {exc}") from exc
            actual_size, actual_md5 = fetched.stat().st_size, _md5(fetched)
            if (actual_size, actual_md5) != (size, md5):
                raise ModelError(
                    f"{repo}/{path} does not match the catalog: {actual_size} bytes, md5 {actual_md5} "
                    f"(expected {size} bytes, md5 {md5}); nothing was installed"
                )
            staged.append(fetched)
        target.mkdir(parents=True, exist_ok=True)
        for fetched in staged:
            shutil.move(str(fetched), str(target / fetched.name))
    log.info("installed Piper voice %s in %s", voice, target)
    return PiperVoiceFiles(voice, target / f"{voice}.onnx", target / f"{voice}.onnx.json")


def hub_download(repo: str, path: str, local_dir: Path) -> Path:
    """A :data:`Download` through the Hugging Face source's downloader (the optional ``hf`` dependency)."""
    download = load_downloader()
    try:
        return Path(download(repo_id=repo, filename=path, local_dir=str(local_dir)))
    except ValueError as exc:  # HfHubHTTPError and friends are OSErrors; bad arguments ValueErrors
        raise OSError(str(exc)) from exc
