"""Split graphs in the model cache: where they live, whether they are current, building them once.

The graphs are derived from the verified model files (see :mod:`voxserve.models.graphs`), one
directory per model family and precision, each with a ``<family>_split.json`` recording the source
and output hashes. They are rebuilt when missing, when the source changed, or when a file is damaged.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from voxserve.errors import ModelError
from voxserve.models.fileio import sha256_file
from voxserve.models.graphs import SPLIT_FORMAT, SplitPrecision, build_split_graphs
from voxserve.models.manifest import InstalledFile
from voxserve.models.store import Builder, ModelStore

log = logging.getLogger(__name__)


def resolve_precision(setting: str, on_gpu: bool) -> SplitPrecision:
    """The decoder precision to use: ``auto`` is int8 on CPU (fastest measured here) and fp16 on a GPU
    (float16 convolutions are what its tensor cores run; not yet measured on one)."""
    if setting == "auto":
        return "fp16" if on_gpu else "int8"
    if setting not in ("int8", "fp32", "fp32-conv2d", "fp16"):
        raise ModelError(f"unknown precision {setting!r}; use auto, int8, fp32, fp32-conv2d or fp16")
    return setting  # type: ignore[return-value]


def split_dir(store: ModelStore, family: str, precision: SplitPrecision = "int8") -> Path:
    if family == "piper":
        return store.root / "piper" / "split"
    return store.root / "kokoro" / f"split-{precision}"


def _current(directory: Path, family: str, source: Path) -> bool:
    record = directory / f"{family}_split.json"
    if not record.is_file():
        return False
    try:
        info = json.loads(record.read_text())
        files: dict[str, str] = info["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if info.get("format") != SPLIT_FORMAT:
        return False
    if info.get("source_size") != source.stat().st_size or info.get("source_mtime") != source.stat().st_mtime:
        return False
    return all(
        (directory / name).is_file() and sha256_file(directory / name) == digest for name, digest in files.items()
    )


def ensure_split_graphs(store: ModelStore, family: str, precision: SplitPrecision = "int8") -> Path:
    """The directory of ``family``'s split graphs at ``precision``, built now if not current."""
    source = store.kokoro_model() if family == "kokoro" else store.piper_model()
    directory = split_dir(store, family, precision)
    if not _current(directory, family, source):
        log.info("building %s split graphs (%s) in %s", family, precision, directory)
        build_split_graphs(source, directory, precision=precision)
        record = directory / f"{family}_split.json"
        info = json.loads(record.read_text())
        info["source_size"] = source.stat().st_size
        info["source_mtime"] = source.stat().st_mtime
        record.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return directory


def split_builder(precision: SplitPrecision) -> Builder:
    """A :attr:`ModelStore.builders` entry that keeps the configured engines' split graphs current."""

    def build(store: ModelStore) -> list[InstalledFile]:
        built: list[InstalledFile] = []
        for family in store.settings.engines:
            directory = ensure_split_graphs(store, family, precision)
            record = json.loads((directory / f"{family}_split.json").read_text())
            for name, digest in sorted(record["files"].items()):
                path = directory / name
                built.append(InstalledFile(f"{directory.name}/{name}", path, path.stat().st_size, digest, True))
        return built

    return build
