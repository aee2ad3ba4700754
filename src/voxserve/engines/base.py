"""The one interface every model engine implements.

An engine turns a phoneme string in its own alphabet into float32 audio at its
native rate. It knows nothing of text, HTTP or sessions. ``stream`` is the
model-level streaming hook: an engine that can decode in windows yields several
pieces; the default yields the whole segment at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Literal, Protocol, runtime_checkable

from voxserve.engines.onnx import RunControl
from voxserve.engines.windowing import WindowCost
from voxserve.types import EngineAudio, VoiceInfo

Alphabet = Literal["misaki", "espeak"]


@runtime_checkable
class Engine(Protocol):
    name: str
    sample_rate: int
    alphabet: Alphabet  # which phoneme alphabet the engine expects
    max_phonemes: int  # longest phoneme string one call accepts

    @property
    def window_cost(self) -> WindowCost | None:
        """What a decoder window costs on this machine, learned as it decodes (None: not windowed)."""

    def voices(self) -> list[VoiceInfo]: ...

    def check_voice(self, voice: str) -> None:
        """Raise :class:`~voxserve.errors.UnknownVoice` unless ``voice`` can be used."""

    def unknown_symbols(self, phonemes: str) -> set[str]:
        """Symbols of ``phonemes`` the model has no id for."""

    def synthesize(self, phonemes: str, voice: str, speed: float = 1.0) -> EngineAudio: ...

    def stream(
        self,
        phonemes: str,
        voice: str,
        speed: float = 1.0,
        *,
        first_window_s: float | None = None,
        next_window_s: Callable[[], float | None] | None = None,
        control: RunControl | None = None,
    ) -> Iterator[EngineAudio]:
        """Yield the audio of ``phonemes`` in one or more pieces, in order.

        ``first_window_s`` asks a windowed engine for about that much audio in its first piece (then
        growing windows); ``None`` means its largest windows. ``next_window_s``, when given, is asked
        before each later window how much audio it may hold (``None``: the largest). Sentence-mode
        engines ignore both.
        ``control.cancel()`` from another thread aborts the model call in flight (then
        :class:`~voxserve.errors.Cancelled` is raised).
        """
