"""Word timings from per-phoneme durations."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from voxserve.types import PhonemeSegment


def word_spans(segment: PhonemeSegment, durations: npt.NDArray[np.int64]) -> list[tuple[str, int, int]]:
    """``(word, start, end)`` in samples from the start of the segment's speech for each spoken word.

    ``durations`` holds samples per symbol of ``segment.phonemes`` (the exact string given to the
    engine). Punctuation-only tokens are skipped. Returns ``[]`` if the lengths don't line up.
    """
    phonemes = segment.phonemes
    if len(durations) != len(phonemes):
        return []
    ends = np.cumsum(durations)
    spans: list[tuple[str, int, int]] = []
    pos = 0
    for word in segment.words:
        found = phonemes.find(word.phonemes, pos) if word.phonemes else -1
        if found < 0:
            continue
        start_idx, end_idx = found, found + len(word.phonemes)
        pos = end_idx
        if not any(ch.isalnum() for ch in word.text):
            continue
        start = int(ends[start_idx - 1]) if start_idx > 0 else 0
        spans.append((word.text, start, int(ends[end_idx - 1])))
    return spans
