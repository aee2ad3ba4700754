"""Join successive pieces of one stream into continuous, click-free audio.

Each piece is pushed whole and comes out at once, except for a short tail (at most
``max_crossfade_ms``) held back while the next piece may still crossfade into it. Every push
reports a :class:`PieceSpan` saying where the kept part of that piece landed in the output, so
word timings computed inside a piece can be moved onto the stream's timeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from voxserve.audio.dsp import (
    equal_gain_crossfade,
    equal_power_crossfade,
    fade_in,
    fade_out,
    ms_to_samples,
    silence,
    trim_silence,
)
from voxserve.audio.pcm import as_mono_float32
from voxserve.types import FloatAudio

CrossfadeShape = Literal["equal_power", "equal_gain"]


@dataclass(frozen=True)
class PieceSpan:
    """Where piece ``index`` landed: its samples ``[in_start, in_end)`` start at ``out_start``."""

    index: int
    in_start: int
    in_end: int
    out_start: int
    pause_samples: int = 0  # silence inserted right after the piece

    @property
    def out_end(self) -> int:
        return self.out_start + (self.in_end - self.in_start)

    def to_output(self, position: int) -> int:
        """Stream position of sample ``position`` of the piece (trimmed parts clamp to the edges)."""
        clamped = min(max(position, self.in_start), self.in_end)
        return self.out_start + (clamped - self.in_start)


@dataclass(frozen=True, eq=False)
class JoinOutput:
    """Audio ready to send after a push, and the pushed piece's placement."""

    audio: FloatAudio
    span: PieceSpan


class Joiner:
    """Stateful joiner for one stream (not thread-safe; one per stream).

    Per piece:

    - ``trim_start`` / ``trim_end``: cut the leading / trailing silence (by energy, or exactly
      ``tail`` samples when given; ``lead_in`` samples when given, but never sound that starts
      inside them) and fade the new edge over ``fade_ms``.
    - ``pause_after_ms``: silence inserted after the piece (its end is faded first).
    - ``crossfade_ms``: the piece continues the previous one (e.g. the next window of the same
      decoder pass) and its first ``crossfade_ms`` cover the same time as the previous piece's
      last ``crossfade_ms``; the two are mixed with a ``crossfade`` shaped fade: equal-power
      (the default) or equal-gain, which keeps the level flat when both sides carry the same
      signal in phase (windows whose decoder state was carried across). Such a piece is
      never start-trimmed. Only a tail that was held back can be mixed: the previous piece must
      have had no ``trim_end`` and no pause (otherwise ``crossfade_ms`` is ignored). When the
      overlap exceeds ``max_crossfade_ms``, the head samples whose time was already played are
      dropped (the span's ``in_start`` says how many).
    """

    def __init__(
        self,
        sample_rate: int,
        *,
        fade_ms: float = 5.0,
        max_crossfade_ms: float = 25.0,
        threshold_db: float = -45.0,
        keep_ms: float = 25.0,
        crossfade: CrossfadeShape = "equal_power",
    ) -> None:
        self.sample_rate = sample_rate
        self._mix = equal_gain_crossfade if crossfade == "equal_gain" else equal_power_crossfade
        self._fade = ms_to_samples(fade_ms, sample_rate)
        self._max_hold = ms_to_samples(max_crossfade_ms, sample_rate)
        self._threshold_db = threshold_db
        self._keep_ms = keep_ms
        self._held: FloatAudio = np.zeros(0, dtype=np.float32)
        self._emitted = 0
        self._index = 0
        self._finished = False

    @property
    def emitted(self) -> int:
        """Samples returned so far (the held tail is not counted)."""
        return self._emitted

    @property
    def held(self) -> int:
        return len(self._held)

    def push(
        self,
        samples: npt.ArrayLike,
        *,
        trim_start: bool = False,
        trim_end: bool = False,
        pause_after_ms: float = 0.0,
        crossfade_ms: float = 0.0,
        lead_in: int | None = None,
        tail: int | None = None,
    ) -> JoinOutput:
        if self._finished:
            raise RuntimeError("Joiner.push called after finish")
        x = as_mono_float32(samples)
        # Only a held tail can be crossfaded; after a trimmed or paused end (or at the start of the
        # stream) a "contiguous" piece is joined like any other.
        continuable = crossfade_ms > 0 and len(self._held) > 0
        overlap = min(ms_to_samples(crossfade_ms, self.sample_rate), len(x)) if continuable else 0
        start, end = self._kept_region(x, trim_start and overlap == 0, trim_end, lead_in, tail)
        body = x[start:end]
        if trim_start and overlap == 0:
            body = fade_in(body, min(self._fade, len(body) // 2))
        pause = ms_to_samples(pause_after_ms, self.sample_rate) if pause_after_ms > 0 else 0
        if trim_end or pause:
            body = fade_out(body, min(self._fade, len(body) // 2))

        held = self._held
        if overlap:
            mixed = min(overlap, len(held), len(body))
            skip = overlap - mixed  # head samples whose time was already emitted
            skip = min(skip, len(body) - mixed)
            lead = held[: len(held) - mixed]
            crossed = self._mix(held[len(held) - mixed :], body[skip : skip + mixed])
            parts = [lead, crossed, body[skip + mixed :]]
            start += skip
            out_start = self._emitted + len(lead)
        else:
            if trim_start and len(held):
                held = fade_out(held, min(self._fade, len(held)))
            parts = [held, body]
            out_start = self._emitted + len(held)
        if pause:
            parts.append(silence(pause_after_ms, self.sample_rate))
        assembled = np.concatenate(parts).astype(np.float32, copy=False)

        hold = 0 if (trim_end or pause) else min(self._max_hold, len(assembled))
        out = assembled[: len(assembled) - hold]
        self._held = assembled[len(assembled) - hold :].copy()
        self._emitted += len(out)
        span = PieceSpan(self._index, start, max(start, end), out_start, pause)
        self._index += 1
        return JoinOutput(out, span)

    def finish(self) -> FloatAudio:
        """Release the held tail; the joiner takes no more pieces."""
        self._finished = True
        out = self._held
        self._held = np.zeros(0, dtype=np.float32)
        self._emitted += len(out)
        return out

    def _kept_region(
        self, x: FloatAudio, trim_start: bool, trim_end: bool, lead_in: int | None, tail: int | None
    ) -> tuple[int, int]:
        start, end = 0, len(x)
        found_start, found_end = 0, len(x)
        need_energy = trim_start or (trim_end and tail is None)
        if need_energy:
            found_start, found_end = trim_silence(x, self.sample_rate, self._threshold_db, self._keep_ms)
            if found_end <= found_start:  # nothing audible: keep nothing that was asked to be trimmed
                found_start = found_end = len(x) if trim_start else 0
        if trim_start:
            # the model starts the first phoneme's sound inside the last frames of its leading padding
            # (the decoder's convolutions reach across frames): an onset heard there is kept, or a
            # word's first consonant is cut ("mado" heard as "wado")
            start = min(len(x), max(0, lead_in), found_start) if lead_in is not None else found_start
        if trim_end:
            end = max(0, len(x) - max(0, tail)) if tail is not None else found_end
        return start, max(start, end)
