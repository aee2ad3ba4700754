"""Hashing copies and progress bars shared by the model sources and the store."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import IO

from tqdm import tqdm

CHUNK = 1 << 20


def progress_bar(total: int | None, desc: str, *, enabled: bool) -> tqdm:
    """A byte-counting bar on stderr; a silent no-op bar when ``enabled`` is false."""
    return tqdm(
        total=total,
        desc=desc,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=sys.stderr,
        disable=not enabled,
        leave=False,
        dynamic_ncols=True,
    )


def announce(message: str, *, enabled: bool) -> None:
    """One progress line on stderr (for steps whose size is unknown)."""
    if enabled:
        tqdm.write(message, file=sys.stderr)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def pump(src: IO[bytes], dst: IO[bytes], digest: hashlib._Hash, bar: tqdm | None = None) -> int:
    """Copy ``src`` to ``dst`` in chunks, feeding ``digest``; returns the bytes copied."""
    copied = 0
    while chunk := src.read(CHUNK):
        dst.write(chunk)
        digest.update(chunk)
        copied += len(chunk)
        if bar is not None:
            bar.update(len(chunk))
    return copied


def copy_hashing(src: IO[bytes], dst: Path, bar: tqdm | None = None) -> tuple[str, int]:
    """Write ``src`` to a new file ``dst`` (parents created); returns (sha256, size)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with dst.open("wb") as out:
        size = pump(src, out, digest, bar)
    return digest.hexdigest(), size


def write_hashing(data: bytes, dst: Path) -> tuple[str, int]:
    """Write ``data`` to a new file ``dst`` (parents created); returns (sha256, size)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(data)
    return hashlib.sha256(data).hexdigest(), len(data)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` at once (parents created): written to a file of its own beside it,
    then renamed over it. A reader never sees half a file, and two processes writing the same file (two
    ``voxserve models fetch``, or a server warming up beside one) each rename a whole one: with a shared
    temporary name, one would rename the other's away and fail."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
