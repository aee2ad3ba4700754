"""A deterministic engine without model files: tones whose length follows the phonemes.

It implements the :class:`~voxserve.engines.base.Engine` protocol the way the windowed ONNX engines
do, with numpy instead of a model, so that the session, the scheduler and the transports can be
exercised in seconds and on any machine:

- every phoneme symbol lasts ``SYMBOL_S`` seconds divided by the speed, as a tone whose pitch depends
  on the voice (a blend's is the weighted mean) and the symbol; spaces are quieter and punctuation is
  silent; the phase runs on across symbols and the envelope is smoothed, so the audio has no clicks;
- :meth:`FakeEngine.stream` cuts the same signal into decoder windows planned by
  :class:`~voxserve.engines.windowing.WindowConfig` (sized by ``next_window_s`` when given), so the
  streamed audio equals :meth:`FakeEngine.synthesize`'s sample for sample;
- each window "costs" ``window_s + audio_s`` × its decoded seconds (context included), and a segment's
  front ``front_s`` before its first window: the model call
  is a wait that a cancelled :class:`~voxserve.engines.onnx.RunControl` or the worker pool's
  preemption stops, as they stop an ONNX Runtime call; the time is recorded in a
  :class:`~voxserve.engines.windowing.WindowCost`.

The first piece carries ``phoneme_durations``, so word timings work as with the real engines. A
runtime loads it through :func:`fake_loader` (``Runtime(settings, families={...})``); the name, voice
ids, rate and alphabet are the caller's, so a test may stand it in for a real engine's voices.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import onnxruntime as ort

from voxserve.engines.base import Alphabet
from voxserve.engines.onnx import RunControl, current_thread_budget
from voxserve.engines.preemption import run_preemptible, work_timer
from voxserve.engines.registry import EngineLoad, EngineLoader, LoadedEngine
from voxserve.engines.voices import parse_blend
from voxserve.engines.windowing import WindowConfig, WindowCost, iter_windows
from voxserve.errors import Cancelled, InvalidInput, UnknownVoice
from voxserve.limits import check_speed
from voxserve.types import EngineAudio, FloatAudio, VoiceInfo

SYMBOL_S = 0.06  # one phoneme symbol at speed 1
FRAME_S = 0.01  # one decoder frame
_SILENT = set(".,!?;:—…-\"'()")
_RAMP_S = 0.005  # the envelope moves over this long (no clicks where a pause starts or ends)


class FakeEngine:
    """A numpy :class:`~voxserve.engines.base.Engine` (see the module docstring). ``voices`` maps each
    voice id to the language it speaks."""

    def __init__(
        self,
        name: str = "fake",
        voices: Mapping[str, str] | None = None,
        *,
        sample_rate: int = 16_000,
        alphabet: Alphabet = "espeak",
        windows: WindowConfig | None = None,
        window_s: float = 0.002,
        audio_s: float = 0.02,
        front_s: float = 0.0,
    ) -> None:
        self.name = name
        self.sample_rate = sample_rate
        self.alphabet = alphabet
        self.max_phonemes = 400
        self._voices = dict(voices or {"en_US-fake-low": "en-us", "en_US-fake-high": "en-us"})
        self.windows = windows or WindowConfig()
        self.window_s = window_s  # work per window
        self.audio_s = audio_s  # work per decoded audio second
        self.front_s = front_s  # work per segment before its first window (the real engines' front graphs)
        self.hop = round(sample_rate * FRAME_S)
        self.context_frames = self.windows.frames(self.windows.context_s, FRAME_S)
        self._cost = WindowCost(context_s=self.context_frames * FRAME_S)

    @property
    def window_cost(self) -> WindowCost:
        return self._cost

    def voices(self) -> list[VoiceInfo]:
        return [
            VoiceInfo(voice, self.name, lang, "unknown", self.sample_rate, f"{voice} (fake)", self.alphabet)
            for voice, lang in self._voices.items()
        ]

    def check_voice(self, voice: str) -> None:
        self._pitch(voice)

    def _pitch(self, voice: str) -> float:
        """The voice's base pitch (Hz): from its id, a blend's the weighted mean of its voices'."""
        try:
            parts = parse_blend(voice)
        except ValueError as exc:
            raise UnknownVoice(f"bad voice {voice!r}: {exc}") from None
        unknown = [name for name, _ in parts if name not in self._voices]
        if unknown:
            raise UnknownVoice(f"unknown voice {unknown[0]!r}; the {self.name} engine has {', '.join(self._voices)}")
        return sum(weight * (100 + sum(map(ord, name)) % 150) for name, weight in parts)

    def unknown_symbols(self, phonemes: str) -> set[str]:
        return {ch for ch in phonemes if not ch.isprintable()}

    def durations(self, phonemes: str, speed: float) -> np.ndarray:
        """Samples per symbol of ``phonemes`` at ``speed``."""
        return np.full(len(phonemes), max(1, round(SYMBOL_S / FRAME_S / speed)) * self.hop, dtype=np.int64)

    def render(self, phonemes: str, voice: str, speed: float = 1.0) -> FloatAudio:
        """The whole segment's audio (what every window is cut from)."""
        base = self._pitch(voice)
        check_speed(speed)
        if not phonemes.strip():
            raise InvalidInput("nothing to synthesize: the phoneme string is empty")
        if len(phonemes) > self.max_phonemes:
            raise InvalidInput(f"{len(phonemes)} phonemes; the fake engine takes at most {self.max_phonemes}")
        unknown = self.unknown_symbols(phonemes)
        if unknown:
            raise InvalidInput(f"phonemes the fake engine cannot say: {sorted(unknown)}")
        lengths = self.durations(phonemes, speed)
        pitch = np.repeat([base * (1 + (ord(ch) % 12) / 24) for ch in phonemes], lengths)
        level = np.repeat([0.0 if ch in _SILENT else 0.1 if ch.isspace() else 0.3 for ch in phonemes], lengths)
        ramp = round(_RAMP_S * self.sample_rate)
        padded = np.pad(level, ramp // 2, mode="edge")
        envelope = np.convolve(padded, np.ones(ramp) / ramp, mode="valid")[: len(level)]
        phase = 2 * np.pi * np.cumsum(pitch) / self.sample_rate
        return (envelope * np.sin(phase)).astype(np.float32)

    def synthesize(self, phonemes: str, voice: str, speed: float = 1.0) -> EngineAudio:
        audio = self.render(phonemes, voice, speed)
        self._work(len(audio) / self.sample_rate, None)
        durations = self.durations(phonemes, speed)
        return EngineAudio(audio, self.sample_rate, phoneme_durations=durations, lead_in=0, tail=0)

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
        audio = self.render(phonemes, voice, speed)
        durations = self.durations(phonemes, speed)
        frames, hop = len(audio) // self.hop, self.hop
        w, ctx = self.windows, self.context_frames
        first, following, largest = w.plan(first_window_s, FRAME_S)
        windows = iter_windows(
            frames,
            first,
            following,
            ctx,
            ctx,
            growth=w.growth,
            max_size=largest,
            next_size=w.sizer(next_window_s, FRAME_S),
        )
        if self.work_seconds(None) > 0:
            self._work(None, control)
        for i, window in enumerate(windows):
            decoded_s = (window.ctx_end - window.ctx_start) * FRAME_S
            with work_timer() as spent:
                self._work(decoded_s, control)
            self._cost.record(decoded_s, spent(), current_thread_budget())
            last = window.end == frames
            yield EngineAudio(
                audio[window.start * hop : window.end * hop],
                self.sample_rate,
                first=i == 0,
                last=last,
                phoneme_durations=durations if i == 0 else None,
                lead_in=0,
                tail=0,
            )

    def work_seconds(self, decoded_s: float | None) -> float:
        """What a model call decoding ``decoded_s`` seconds costs (``None``: a segment's front, before its
        first window). A subclass may make it depend on the call's thread budget
        (``bench/simulate_cores.py`` does, with costs learned from a real engine)."""
        return self.front_s if decoded_s is None else self.window_s + self.audio_s * decoded_s

    def _work(self, decoded_s: float | None, control: RunControl | None) -> None:
        """One model call's worth of waiting, stopped like an ONNX Runtime call (cancel, preemption)."""
        if control is not None and control.cancelled:
            raise Cancelled("fake engine: the stream was cancelled")
        seconds = self.work_seconds(decoded_s)
        try:
            run_preemptible(
                lambda options: _wait(seconds, options),
                control.options if control is not None else None,
                lambda: control is not None and control.cancelled,
            )
        except RuntimeError as exc:
            if control is not None and control.cancelled:
                raise Cancelled("fake engine: the stream was cancelled") from exc
            raise


def _wait(seconds: float, options: ort.RunOptions | None) -> None:
    """Sleep ``seconds`` in short steps; a set ``options.terminate`` stops it as it stops a model call."""
    end = time.perf_counter() + seconds
    while (left := end - time.perf_counter()) > 0:
        if options is not None and options.terminate:
            raise RuntimeError("the fake model call was terminated")
        time.sleep(min(left, 0.001))


def fake_loader(
    name: str = "fake",
    voices: Mapping[str, str] | None = None,
    *,
    sample_rate: int = 16_000,
    alphabet: Alphabet = "espeak",
    window_s: float = 0.002,
    audio_s: float = 0.02,
) -> EngineLoader:
    """A loader (:data:`voxserve.engines.registry.ENGINES`' kind) of a :class:`FakeEngine` on the
    runtime's window plan."""

    def load(load: EngineLoad) -> LoadedEngine:
        engine = FakeEngine(
            name,
            voices,
            sample_rate=sample_rate,
            alphabet=alphabet,
            windows=load.windows,
            window_s=window_s,
            audio_s=audio_s,
        )
        return LoadedEngine(engine)

    return load
