"""The contract every model source meets (see :mod:`voxserve.models.sources`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from voxserve.models.manifest import ModelFile


@dataclass(frozen=True)
class StagedFile:
    """A file a source wrote into staging. ``variant`` names a known variant whose hash differs
    from the manifest's (the source has checked its structure instead); ``None`` means the
    manifest hash must match."""

    path: Path
    sha256: str
    size: int
    variant: str | None = None


@dataclass
class SourceResult:
    """What one source staged (by relpath) and, for each file it could not stage, why."""

    staged: dict[str, StagedFile] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    def fail(self, files: Sequence[ModelFile], reason: str) -> None:
        for item in files:
            if item.relpath not in self.staged:
                self.problems[item.relpath] = reason


class Source(Protocol):
    name: str

    def provide(self, files: Sequence[ModelFile], staging: Path, *, progress: bool) -> SourceResult:
        """Stage as many of ``files`` as possible under ``staging``; raise ModelError if none can be."""
        ...
