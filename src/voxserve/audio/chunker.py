"""Re-cut a stream of audio arrays into chunks of a steady size."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

from voxserve.audio.pcm import as_mono_float32
from voxserve.types import FloatAudio


class Rechunker:
    """Split and merge pushed arrays into chunks of ``chunk_samples``.

    The first chunk may be smaller (``first_chunk_samples``) so the first audio leaves quickly.
    ``flush`` returns whatever is left (shorter than a chunk) at the end of an utterance.
    """

    def __init__(self, chunk_samples: int, first_chunk_samples: int | None = None) -> None:
        if chunk_samples <= 0:
            raise ValueError(f"chunk_samples must be positive, got {chunk_samples}")
        self.chunk_samples = chunk_samples
        self._first = first_chunk_samples if first_chunk_samples and first_chunk_samples > 0 else chunk_samples
        self._parts: list[FloatAudio] = []
        self._pending = 0
        self._chunks_out = 0

    @property
    def pending(self) -> int:
        """Samples buffered and not yet returned."""
        return self._pending

    def _target(self) -> int:
        return self._first if self._chunks_out == 0 else self.chunk_samples

    def push(self, samples: npt.ArrayLike) -> list[FloatAudio]:
        x = as_mono_float32(samples)
        if len(x):
            self._parts.append(x)
            self._pending += len(x)
        if self._pending < self._target():
            return []
        buffered = np.concatenate(self._parts) if len(self._parts) > 1 else self._parts[0]
        out: list[FloatAudio] = []
        position = 0
        while len(buffered) - position >= self._target():
            size = self._target()
            out.append(buffered[position : position + size].copy())
            position += size
            self._chunks_out += 1
        rest = buffered[position:]
        self._parts = [rest.copy()] if len(rest) else []
        self._pending = len(rest)
        return out

    def flush(self) -> FloatAudio | None:
        """The remaining samples as one chunk, or ``None`` if nothing is buffered."""
        if self._pending == 0:
            return None
        chunk = np.concatenate(self._parts) if len(self._parts) > 1 else self._parts[0].copy()
        self._parts = []
        self._pending = 0
        self._chunks_out += 1
        return chunk


def rechunk(
    stream: Iterable[npt.ArrayLike], chunk_samples: int, first_chunk_samples: int | None = None
) -> Iterator[FloatAudio]:
    """Generator form of :class:`Rechunker`: yields full chunks, then the remainder."""
    chunker = Rechunker(chunk_samples, first_chunk_samples)
    for piece in stream:
        yield from chunker.push(piece)
    tail = chunker.flush()
    if tail is not None:
        yield tail
