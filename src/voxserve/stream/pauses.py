"""The pause a segment ends with, the same wherever its decoder windows were cut.

A segment ends with the configured pause (sentence or clause). The model puts some silence of its own
after the final punctuation, which is kept, and only the shortfall is added. That natural silence can
begin in the segment's last window or, when a cut falls just after the speech, in the window before:
the last window then holds nothing but silence, and counting only its own would make the pause longer
by whatever the earlier window ended with. So each segment keeps count of the silence at the end of
what it has emitted so far (:class:`TrailingQuiet`), and the pause after its last piece subtracts it
(:func:`pause_after_ms`). Silence is measured from the last sample louder than the silence
finder's threshold, with no margin, so that a pause split across windows adds up to the same.
"""

from __future__ import annotations

from voxserve.audio.dsp import trim_silence
from voxserve.types import FloatAudio


class TrailingQuiet:
    """Samples of silence at the end of a segment's pieces so far (:func:`voxserve.audio.dsp.trim_silence`'s
    threshold); 0 at the segment's start. Counted only up to the pause the segment ends with
    (``cap_ms``): more natural silence than that adds nothing, so each piece's end is scanned no further
    back than the pause, and not at all for a segment that ends without one (the audio path is hot)."""

    def __init__(self, sample_rate: int, cap_ms: float) -> None:
        self.sample_rate = sample_rate
        self.cap = max(0, round(cap_ms * sample_rate / 1000))
        self.samples = 0

    def add(self, samples: FloatAudio) -> None:
        """A piece of the segment was emitted: its trailing silence, or all of it when it holds no sound."""
        if self.cap == 0:
            return
        end = samples[-self.cap :]
        _, sound_end = trim_silence(end, self.sample_rate, keep_ms=0.0)
        quiet = self.samples + len(samples) if sound_end == 0 else len(end) - sound_end
        self.samples = min(quiet, self.cap)


def pause_after_ms(samples: FloatAudio, tail: int | None, target_ms: float, quiet_before: int, rate: int) -> float:
    """Silence to add after a segment's last piece ``samples`` so the pause is at least ``target_ms``.

    ``tail``: the model's padding at the piece's end (dropped); the silence before it is the model's own
    and kept, so only the shortfall is added. ``None``: the padding is not known, the joiner trims all the
    piece's trailing silence, and the whole pause is added. Either way, when the piece holds no sound the
    silence began earlier: the ``quiet_before`` samples the segment's earlier pieces ended with count too.
    """
    if target_ms <= 0:
        return target_ms
    kept = samples if tail is None else samples[: len(samples) - tail]
    _, sound_end = trim_silence(kept, rate, keep_ms=0.0)
    if sound_end == 0:
        natural = quiet_before + (len(kept) if tail is not None else 0)
    else:
        natural = len(kept) - sound_end if tail is not None else 0
    return max(0.0, target_ms - natural * 1000 / rate)
