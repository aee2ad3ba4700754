"""Synthesis for the evaluation, in-process: each sentence streamed (the server's windowed decoding,
chunk by chunk, joins remembered) and synthesized whole (one decoder call per sentence) as reference.

In-process rather than over HTTP so the reference can be made with the same models, and so no server
has to run; the streamed audio is what the server sends, minus the encoding (PCM is lossless anyway).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from voxserve.engines.piper import PiperEngine
from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.tuning import Tuning
from voxserve.types import SynthesisParams

if TYPE_CHECKING:
    from voxserve.evaluation.kokoro_windows import KokoroWindows


@dataclass(frozen=True)
class Synthesis:
    samples: np.ndarray
    sample_rate: int
    joins: tuple[int, ...]  # sample index where each chunk after the first begins


class Synthesizer:
    """Two runtimes over the same models: windowed (streamed) and sentence (whole)."""

    def __init__(self, engines: list[str], streamed: Runtime | None = None) -> None:
        """``streamed``: an already loaded windowed runtime to use (and leave open) instead of a new one."""
        base = Settings(engines=engines)
        self._own = streamed is None
        self.streamed = streamed or Runtime(base, Tuning(decode_mode="windowed"))
        self.whole = Runtime(base, Tuning(decode_mode="sentence"))
        if self._own:
            self.streamed.load(warm=False)
        self.whole.load(warm=False)
        self._windows: KokoroWindows | None = None

    def _kokoro(self) -> KokoroWindows:
        from voxserve.evaluation.kokoro_windows import KokoroWindows

        if self._windows is None:
            self._windows = KokoroWindows(self.streamed)
        return self._windows

    def kokoro_windows(self, text: str, voice: str, lang: str) -> tuple[np.ndarray, np.ndarray]:
        """Kokoro only: one front of ``text`` decoded whole and in the server's first-segment windows."""
        return self._kokoro().whole_and_windowed(text, voice, lang)

    def kokoro_phonemes(self, text: str, lang: str) -> str:
        """The phonemes the server's front end gives Kokoro for ``text``."""
        return self._kokoro().phonemes(text, lang)

    def piper_windows(self, text: str, voice: str, lang: str) -> tuple[np.ndarray, np.ndarray]:
        """Piper only: one front of ``text`` decoded in one call and in the server's windows. Piper's front
        draws random noise for its durations and latent, so two syntheses never line up; decoding the
        same front both ways isolates what windowed decoding changes, as for Kokoro."""
        engine = self.streamed.engines["piper"]
        assert isinstance(engine, PiperEngine) and engine.windowed, "Piper windowing needs decode_mode=windowed"
        segments = self.streamed.frontend.phonemize(text, lang, engine.alphabet, max_phonemes=engine.max_phonemes)
        front = engine.front(" ".join(s.phonemes for s in segments), voice)
        windows = engine.decode_front(front, first_window_s=self.streamed.window_config().first_s)
        return np.asarray(engine.decode_whole(front)), np.concatenate([piece.samples for piece in windows])

    def voices(self) -> dict[str, str]:
        """voice id → engine."""
        return {v.id: v.engine for v in self.streamed.voices()}

    def speak(self, text: str, voice: str, *, whole: bool = False) -> Synthesis:
        return asyncio.run(self._speak(self.whole if whole else self.streamed, text, voice))

    @staticmethod
    async def _speak(runtime: Runtime, text: str, voice: str) -> Synthesis:
        session = runtime.open_session(SynthesisParams(voice=voice), pace=False)
        session.push_text(text)
        session.close()
        pieces: list[np.ndarray] = []
        async for chunk in session:
            if len(chunk.samples):
                pieces.append(np.asarray(chunk.samples, dtype=np.float32))
        starts = np.cumsum([len(p) for p in pieces])[:-1]
        samples = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
        return Synthesis(samples, session.sample_rate, tuple(int(s) for s in starts))

    def close(self) -> None:
        if self._own:
            self.streamed.close()
        self.whole.close()
