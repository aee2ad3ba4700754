"""Split graphs in the model cache: where they live, whether they are current, building them once.

The graphs are derived from the verified model files (see :mod:`voxserve.models.graphs`), one
directory per model family and precision, each with a ``<family>_split.json`` recording the source
and output hashes. They are rebuilt when missing, when the source changed, or when a file is damaged.

In a sealed cache (:mod:`voxserve.models.sealed`) a graph counts by the plain sha256 in its sealed
header, and a source by the same; a rebuild then decrypts the source in memory and writes every graph
sealed with the operator's key, so no plain graph is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path

from voxserve.errors import ModelError
from voxserve.models.conv_gemm import cpu_identity, measure
from voxserve.models.fileio import sha256_file, write_atomic
from voxserve.models.graphs import PRECISIONS, SPLIT_FORMAT, build_split_graphs
from voxserve.models.manifest import InstalledFile
from voxserve.models.sealed import SUFFIX as SEALED_SUFFIX
from voxserve.models.sealed import ModelKey, read_header, sealed_path
from voxserve.models.store import Builder, ModelStore
from voxserve.types import SplitPrecision

log = logging.getLogger(__name__)


def resolve_precision(setting: str, on_gpu: bool, threads: int = 1, remember: Path | None = None) -> SplitPrecision:
    """The decoder precision to use. ``auto`` is fp16 on a GPU (float16 convolutions are what its tensor
    cores run). On a CPU it is int8, with its convolutions as integer matrix products (``int8-gemm``)
    when :func:`~voxserve.models.conv_gemm.measure` finds that form exact and faster here, at one thread
    and at ``threads``: the same numbers either way, and which kernels are faster depends on the CPU.

    With ``remember`` (a JSON file in the model cache), the verdict is kept there with what it depends on
    (:func:`~voxserve.models.conv_gemm.cpu_identity`, ``threads``) and reused while they are the same: a
    start on a busy machine must not flip to the other variant, whose graphs and learned statistics
    would then be built again."""
    if setting != "auto":
        if setting not in PRECISIONS:
            raise ModelError(f"unknown precision {setting!r}; use auto or one of {', '.join(PRECISIONS)}")
        return setting
    if on_gpu:
        return "fp16"
    identity = {"cpu": cpu_identity(), "threads": threads}
    known = _recall(remember, identity)
    if known is not None:
        log.info("decoder precision %s, as measured on this CPU before (%s)", known, remember)
        return known
    verdicts = [measure(level) for level in sorted({1, max(threads, 1)})]
    chosen: SplitPrecision = "int8-gemm" if all(v.pays for v in verdicts) else "int8"
    exact = all(v.exact for v in verdicts)
    probe_ms = [[round(v.conv_s * 1000, 3), round(v.gemm_s * 1000, 3)] for v in verdicts]
    log.info(
        "int8 convolutions as matrix products: %s; probe ms ConvInteger/MatMulInteger %s: using %s",
        "exact" if exact else "NOT exact on this CPU",
        probe_ms,
        chosen,
    )
    if remember is not None:
        _record(remember, {**identity, "precision": chosen, "exact": exact, "probe_ms": probe_ms})
    return chosen


def _recall(remember: Path | None, identity: dict[str, object]) -> SplitPrecision | None:
    """The precision kept in ``remember`` for ``identity`` (None when there is none, or it is unreadable)."""
    try:
        known = json.loads(remember.read_text()) if remember is not None and remember.is_file() else {}
    except (OSError, ValueError):
        return None
    if not isinstance(known, dict) or any(known.get(key) != value for key, value in identity.items()):
        return None
    precision = known.get("precision")
    return next((p for p in PRECISIONS if p == precision), None)


def _record(remember: Path, record: dict[str, object]) -> None:
    """Keep ``record`` in ``remember`` (:func:`~voxserve.models.fileio.write_atomic`); a cache that cannot
    be written is no error: the next start measures again."""
    with contextlib.suppress(OSError):
        write_atomic(remember, (json.dumps(record, indent=2) + "\n").encode())


def precision_record(store: ModelStore) -> Path:
    """Where the cache keeps the ``auto`` precision verdict for this machine."""
    return store.root / "kokoro" / "precision.json"


def split_dir(store: ModelStore, family: str, precision: SplitPrecision = "int8") -> Path:
    if family == "piper":
        return store.root / "piper" / "split"
    return store.root / "kokoro" / f"split-{precision}"


def _plain_sha256(path: Path) -> str | None:
    """The sha256 of ``path``'s plain content: hashed when the file is plain, from the header when it is
    sealed, ``None`` when neither exists or the sealed header is unreadable."""
    if not path.name.endswith(SEALED_SUFFIX) and path.is_file():
        return sha256_file(path)
    sealed = path if path.name.endswith(SEALED_SUFFIX) else sealed_path(path)
    if not sealed.is_file():
        return None
    try:
        return read_header(sealed).plain_sha256
    except ModelError:
        return None


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
    if source.name.endswith(SEALED_SUFFIX):
        if info.get("source_sha256") != _plain_sha256(source):
            return False
    elif info.get("source_size") != source.stat().st_size or info.get("source_mtime") != source.stat().st_mtime:
        return False
    return all(_plain_sha256(directory / name) == digest for name, digest in files.items())


def ensure_split_graphs(store: ModelStore, family: str, precision: SplitPrecision = "int8") -> Path:
    """The directory of ``family``'s split graphs at ``precision``, built now if not current."""
    source = _source(store, family)
    directory = split_dir(store, family, precision)
    if not _current(directory, family, source):
        log.info("building %s split graphs (%s) in %s", family, precision, directory)
        build_split_graphs(source, directory, precision=precision, key=_sealing_key(store, source))
        record = directory / f"{family}_split.json"
        info = json.loads(record.read_text())
        info["source_size"] = source.stat().st_size
        info["source_mtime"] = source.stat().st_mtime
        record.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    return directory


def _source(store: ModelStore, family: str) -> Path:
    """The whole model ``family``'s split graphs are derived from."""
    return store.kokoro_model() if family == "kokoro" else store.piper_model()


def _sealing_key(store: ModelStore, source: Path) -> ModelKey | None:
    """The key to seal rebuilt graphs with: the store's when its source is sealed (required then)."""
    if not source.name.endswith(SEALED_SUFFIX):
        return None
    if store.key is None:
        raise ModelError(f"{source} is encrypted; set VOXSERVE_MODEL_KEY_FILE (or VOXSERVE_MODEL_KEY) to its key")
    return store.key


def split_builder(precision: SplitPrecision) -> Builder:
    """A :attr:`ModelStore.builders` entry that keeps the configured engines' split graphs current; it
    returns the files it built now (none when they were current)."""

    def build(store: ModelStore) -> list[InstalledFile]:
        built: list[InstalledFile] = []
        for family in store.settings.engines:
            if _current(split_dir(store, family, precision), family, _source(store, family)):
                continue
            directory = ensure_split_graphs(store, family, precision)
            record = json.loads((directory / f"{family}_split.json").read_text())
            for name, digest in sorted(record["files"].items()):
                path = directory / name if (directory / name).is_file() else sealed_path(directory / name)
                built.append(InstalledFile(f"{directory.name}/{name}", path, path.stat().st_size, digest, True))
        return built

    return build
