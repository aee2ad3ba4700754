"""Windowed decoding helpers shared by the streaming engines: window plans and the crossfade joiner.

A sentence of ``F`` decoder frames is cut into windows ``[start, end)``; each is decoded with up to
``left``/``right`` frames of context on either side, the context is cropped, and consecutive windows are
joined with a short raised-cosine crossfade taken from the right context of the earlier window. The
pieces a joiner emits have exactly ``(end - start) * hop`` samples, so their concatenation has the length
of a whole-sentence decode.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from voxserve.errors import InvalidInput
from voxserve.types import FloatAudio


@dataclass(frozen=True)
class Window:
    """Frames ``[start, end)`` are emitted; frames ``[ctx_start, ctx_end)`` are decoded."""

    start: int
    end: int
    ctx_start: int
    ctx_end: int


def plan_windows(frames: int, first: int, size: int, left: int, right: int) -> list[Window]:
    """Cut ``frames`` into a first window of ``first`` frames then windows of ``size`` frames.

    A last window shorter than half of ``size`` is merged into the one before it.
    """
    if first < 1 or size < 1 or left < 0 or right < 0:
        raise InvalidInput(f"bad window plan first={first} size={size} left={left} right={right}")
    bounds = [0]
    nxt = min(first, frames)
    while nxt < frames:
        bounds.append(nxt)
        nxt += size
    bounds.append(frames)
    if len(bounds) > 2 and bounds[-1] - bounds[-2] < size // 2 and bounds[-2] != min(first, frames):
        del bounds[-2]
    return [Window(a, b, max(0, a - left), min(frames, b + right)) for a, b in itertools.pairwise(bounds)]


def fade_curves(length: int) -> tuple[FloatAudio, FloatAudio]:
    """Raised-cosine fade-out/fade-in pair; the two sum to 1 (right for near-identical signals)."""
    t = (np.arange(length, dtype=np.float64) + 0.5) / max(length, 1)
    fade_in = np.sin(0.5 * np.pi * t) ** 2
    return (1.0 - fade_in).astype(np.float32), fade_in.astype(np.float32)


class CrossfadeJoiner:
    """Turns decoded windows (context included) into contiguous, crossfaded pieces."""

    def __init__(self, hop: int, crossfade: int) -> None:
        self.hop = hop
        self.crossfade = crossfade
        self._fade_out, self._fade_in = fade_curves(crossfade)
        self._tail: FloatAudio | None = None

    def push(self, window: Window, decoded: FloatAudio) -> FloatAudio:
        """Return the samples of ``[window.start, window.end)`` from ``decoded`` (covering the context span)."""
        hop = self.hop
        lo = (window.start - window.ctx_start) * hop
        hi = (window.end - window.ctx_start) * hop
        piece = np.array(decoded[lo:hi], dtype=np.float32, copy=True)
        if self._tail is not None:
            n = min(len(self._tail), len(piece))
            piece[:n] = self._tail[:n] * self._fade_out[:n] + piece[:n] * self._fade_in[:n]
        tail = decoded[hi : hi + self.crossfade]
        self._tail = np.asarray(tail, dtype=np.float32) if len(tail) == self.crossfade and self.crossfade else None
        return piece
