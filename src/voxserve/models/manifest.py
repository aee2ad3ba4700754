"""What the model cache must hold: one frozen :class:`ModelFile` per file, with its expected sha256.

Cache layout, relative to ``settings.cache_dir``::

    kokoro/kokoro-v1.0.int8.onnx
    kokoro/voices/<voice>.bin          (54 voices)
    piper/en_US-joe-medium.onnx
    piper/en_US-joe-medium.onnx.json
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from voxserve.models.voice_hashes import VOICE_SHA256, VOICE_SIZE

EngineName = Literal["kokoro", "piper"]
FileKind = Literal["model", "voice", "config"]

ENGINES: tuple[EngineName, ...] = ("kokoro", "piper")

KOKORO_MODEL_PATH = "kokoro/kokoro-v1.0.int8.onnx"
KOKORO_VOICES_DIR = "kokoro/voices"
PIPER_MODEL_PATH = "piper/en_US-joe-medium.onnx"
PIPER_CONFIG_PATH = "piper/en_US-joe-medium.onnx.json"

_VOICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class ModelFile:
    """One file of the cache: where it lives (relative to the cache root) and what it must hash to."""

    name: str
    engine: EngineName
    kind: FileKind
    relpath: str
    sha256: str
    size: int | None = None

    @property
    def filename(self) -> str:
        return self.relpath.rsplit("/", 1)[-1]


KOKORO_MODEL = ModelFile(
    name="kokoro-model",
    engine="kokoro",
    kind="model",
    relpath=KOKORO_MODEL_PATH,
    sha256="6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
    size=92_361_271,
)

PIPER_MODEL = ModelFile(
    name="piper-model",
    engine="piper",
    kind="model",
    relpath=PIPER_MODEL_PATH,
    sha256="58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
    size=63_201_294,
)

PIPER_CONFIG = ModelFile(
    name="piper-config",
    engine="piper",
    kind="config",
    relpath=PIPER_CONFIG_PATH,
    sha256="3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
    size=4_794,
)

KOKORO_VOICE_NAMES: tuple[str, ...] = tuple(sorted(VOICE_SHA256))


def is_valid_voice_name(name: str) -> bool:
    """A voice name usable as a file stem (no path separators, no leading dot)."""
    return bool(_VOICE_NAME.match(name)) and ".." not in name


def kokoro_voice_file(name: str) -> ModelFile:
    """The manifest entry of a known Kokoro voice; ``KeyError`` for a name the manifest lacks."""
    return ModelFile(
        name=f"voice:{name}",
        engine="kokoro",
        kind="voice",
        relpath=f"{KOKORO_VOICES_DIR}/{name}.bin",
        sha256=VOICE_SHA256[name],
        size=VOICE_SIZE,
    )


KOKORO_VOICES: tuple[ModelFile, ...] = tuple(kokoro_voice_file(name) for name in KOKORO_VOICE_NAMES)


def manifest(engines: list[str] | tuple[str, ...] | None = None) -> tuple[ModelFile, ...]:
    """Every file the given engines need (all engines when ``None``), models first."""
    wanted = ENGINES if engines is None else tuple(engines)
    unknown = [engine for engine in wanted if engine not in ENGINES]
    if unknown:
        raise ValueError(f"unknown engine(s) {unknown}; known: {list(ENGINES)}")
    files: list[ModelFile] = []
    if "kokoro" in wanted:
        files.append(KOKORO_MODEL)
        files.extend(KOKORO_VOICES)
    if "piper" in wanted:
        files.extend((PIPER_MODEL, PIPER_CONFIG))
    return tuple(files)


@dataclass(frozen=True)
class InstalledFile:
    """One cache file as found on disk. ``status`` is ``ok``, ``missing`` or ``corrupt``; ``variant``
    names an accepted variant whose hash differs from the manifest's (see ``hf_source``)."""

    name: str
    path: Path
    size: int
    sha256: str
    ok: bool
    status: str = "ok"
    variant: str | None = None
