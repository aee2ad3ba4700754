"""Domain values shared by the engines, the text frontend, the session and the servers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

FloatAudio = npt.NDArray[np.float32]
Boundary = Literal["sentence", "clause", "none"]
# How Kokoro's split decoder is built (:func:`voxserve.models.graphs.build_split_graphs`); the operator's
# setting adds "auto" (:class:`voxserve.settings.Settings`).
SplitPrecision = Literal["int8", "int8-gemm", "fp32", "fp32-conv2d", "fp16"]


@dataclass(frozen=True)
class VoiceInfo:
    """One voice a client may ask for."""

    id: str
    engine: str
    lang: str  # BCP-47-ish primary code: "en-us", "en-gb", "zh", "ja", "fr", "es", "hi", "it", "pt-br"
    gender: str  # "female" | "male"
    sample_rate: int
    name: str = ""
    alphabet: str = ""  # the phoneme alphabet of its engine ("misaki", "espeak"): inline phonemes and lexicons


@dataclass(frozen=True)
class PhonemeWord:
    """A word (or punctuation token) of input text with its phonemes.

    ``space_after`` says whether a word separator follows in the phoneme string.
    Punctuation tokens carry their mark as phonemes (``","`` → ``","``).
    """

    text: str
    phonemes: str
    space_after: bool = True


@dataclass(frozen=True)
class PhonemeSegment:
    """A piece of text ready for a model: one sentence or clause, phonemized."""

    text: str
    words: tuple[PhonemeWord, ...]
    lang: str
    boundary: Boundary = "sentence"

    @property
    def phonemes(self) -> str:
        parts: list[str] = []
        for word in self.words:
            parts.append(word.phonemes)
            if word.space_after:
                parts.append(" ")
        return "".join(parts).strip()


@dataclass(frozen=True)
class WordTiming:
    """Where a word is heard, in seconds from the start of the stream, and where it was read from:
    ``char_start``/``char_end`` index the stream's text as it was sent (``None`` when unknown)."""

    word: str
    start_s: float
    end_s: float
    char_start: int | None = None
    char_end: int | None = None


@dataclass(frozen=True)
class SchedulerStats:
    """The synthesis worker pool now: model jobs running and waiting, calls stopped so far for a
    stream's first audio (see :mod:`voxserve.stream.pool`), how long before its listener runs dry a
    playing stream's work is due (:mod:`voxserve.stream.margin`), and the core-seconds streams hold
    per core-second admission books for them (:class:`voxserve.stream.capacity.CoreMeter`; 1 until
    measured)."""

    running: int
    queued: int
    preemptions: int
    playing_margin_s: float = 0.0
    core_factor: float = 1.0


@dataclass(frozen=True, eq=False)
class EngineAudio:
    """One piece of audio out of an engine (a whole segment, or one decoder window).

    ``phoneme_durations`` (samples per phoneme symbol of the segment, pads excluded) is set
    when the model exposes durations; it enables word timings.
    ``lead_in``/``tail`` count samples of model padding (silence the model put at the
    start/end) that a joiner may trim; ``None`` means unknown (detect by energy).
    ``more_runs`` marks a ``last`` piece after which the same ``stream()`` call goes on with another
    model input (Kokoro splits phonemes beyond its 510-token window): without it, a last piece is the
    call's last, and the caller need not ask the engine again (a worker job that would find nothing).
    """

    samples: FloatAudio
    sample_rate: int
    first: bool = True
    last: bool = True
    phoneme_durations: npt.NDArray[np.int64] | None = None
    lead_in: int | None = None
    tail: int | None = None
    more_runs: bool = False


@dataclass(frozen=True, eq=False)
class AudioChunk:
    """A piece of a stream's audio, as sent to clients.

    ``offset`` is the index of its first sample from the start of the stream.
    ``words`` holds the timings of words whose start falls inside this chunk. ``resumed``: the listener
    ran dry waiting for the client's text, and its playback starts again with this chunk
    (:meth:`voxserve.stream.playback.PlaybackClock.text_arrived`).
    """

    samples: FloatAudio
    sample_rate: int
    offset: int
    index: int
    words: tuple[WordTiming, ...] = field(default_factory=tuple)
    final: bool = False
    resumed: bool = False

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate

    @property
    def start_s(self) -> float:
        return self.offset / self.sample_rate


@dataclass(frozen=True)
class LexiconEntry:
    """A pronunciation rule: text matching ``match`` (a whole word, any case; or, from a server file, a
    regular expression) is spoken as ``phonemes`` (in ``alphabet``, the voice's) or read as ``text``."""

    match: str
    phonemes: str | None = None
    text: str | None = None
    regex: bool = False
    alphabet: str | None = None  # None: the voice's


@dataclass(frozen=True)
class SynthesisParams:
    """What a caller asks of one stream."""

    voice: str
    speed: float = 1.0
    lang: str | None = None
    word_timings: bool = True
    phoneme_input: bool = False  # the whole input is phonemes, not text
    lexicon: tuple[LexiconEntry, ...] = ()  # the caller's entries; the server's are added when the stream opens
