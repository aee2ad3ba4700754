"""Kokoro's windowing alone: one sentence's front decoded whole and in the server's windows.

The server's stream and a sentence-mode synthesis of the same text can differ in timing (text split
into segments, a different graph predicting durations), which time-warps one against the other and
says little about windowing. Decoding the *same* front both ways isolates what windowed decoding
changes: the whole decode is the monolithic graph's audio, sample for sample.
"""

from __future__ import annotations

import numpy as np

from voxserve.engines.kokoro import KokoroEngine
from voxserve.engines.kokoro_stream import HOP, SAMPLE_RATE, KokoroFront
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.runtime import Runtime


class KokoroWindows:
    """Fronts and decodes through a loaded runtime's windowed Kokoro engine and its settings."""

    def __init__(self, runtime: Runtime) -> None:
        engine = runtime.engines["kokoro"]
        if not isinstance(engine, KokoroEngine) or engine.streamer is None:
            raise ValueError("Kokoro windowing needs decode_mode=windowed")
        self.runtime = runtime
        self.engine = engine
        self.streamer = engine.streamer
        self.windows = runtime.window_config()
        self.frame_s = HOP / SAMPLE_RATE

    def phonemes(self, text: str, lang: str) -> str:
        """The phonemes the server's front end gives Kokoro for ``text`` (its segments, space-joined)."""
        return " ".join(s.phonemes for s in self.runtime.frontend.phonemize(text, lang))

    def front(self, text: str, voice: str, lang: str = "en-us") -> KokoroFront:
        ids = np.array([KOKORO_VOCAB[c] for c in self.phonemes(text, lang)], dtype=np.int64)
        return self.streamer.front(
            ids,
            self.engine.style_tables.style(voice, len(ids)),
            max_pad_frames=self.windows.frames(self.windows.max_pad_s, self.frame_s),
            max_lead_frames=self.windows.frames(self.windows.max_lead_s, self.frame_s),
        )

    def whole_and_windowed(self, text: str, voice: str, lang: str) -> tuple[np.ndarray, np.ndarray]:
        """The sentence's front decoded in one call, and the engine's own stream of it with the
        first-segment plan (the server's path; its front is the same, computed from the same input)."""
        whole = np.asarray(self.streamer.decode(self.front(text, voice, lang)))
        pieces = self.engine.stream(self.phonemes(text, lang), voice, first_window_s=self.windows.first_s)
        return whole, np.concatenate([piece.samples for piece in pieces])
