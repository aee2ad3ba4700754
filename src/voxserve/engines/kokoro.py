"""Kokoro-82M (StyleTTS 2 + iSTFTNet) through ONNX Runtime, 24 kHz, 54 voices."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxserve.engines.base import Alphabet
from voxserve.engines.kokoro_stream import Array, KokoroFront, KokoroStreamer
from voxserve.engines.kokoro_vocab import KOKORO_PAD_ID, KOKORO_VOCAB
from voxserve.engines.onnx import OnnxSession, RunControl
from voxserve.engines.voices import KOKORO_ALPHABET, kokoro_voice_info, parse_blend
from voxserve.engines.windowing import WindowConfig, WindowCost, run_graph
from voxserve.errors import InvalidInput, UnknownVoice
from voxserve.limits import check_speed
from voxserve.types import EngineAudio, VoiceInfo

log = logging.getLogger(__name__)

SAMPLE_RATE = 24_000
FRAME_S = 600 / SAMPLE_RATE  # one decoder frame
MAX_TOKENS = 510  # phoneme ids per call, pads excluded
_BREAK_SYMBOLS = (".", "!", "?", ";", ":", ",", "—", "…", " ")


def split_phonemes(phonemes: str, limit: int) -> list[str]:
    """Cut a phoneme string into pieces of at most ``limit`` symbols, preferring phrase boundaries."""
    pieces: list[str] = []
    rest = phonemes.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = -1
        for mark in _BREAK_SYMBOLS:  # strongest boundary first
            cut = window.rfind(mark)
            if cut > limit // 3:
                break
        if cut <= 0:
            cut = limit - 1
        pieces.append(rest[: cut + 1].strip())
        rest = rest[cut + 1 :].strip()
    if rest:
        pieces.append(rest)
    return pieces


class KokoroVoices:
    """Loads voice style tables lazily and blends them; thread-safe."""

    def __init__(self, voices_dir: Path) -> None:
        self._dir = voices_dir
        self._cache: dict[str, npt.NDArray[np.float32]] = {}
        self._lock = threading.Lock()

    def ids(self) -> list[str]:
        return sorted(p.stem for p in self._dir.glob("*.bin"))

    def _load(self, name: str) -> npt.NDArray[np.float32]:
        with self._lock:
            table = self._cache.get(name)
            if table is None:
                path = self._dir / f"{name}.bin"
                if not path.is_file():
                    raise UnknownVoice(f"unknown voice {name!r}; list voices with 'voxserve voices' or GET /v1/voices")
                table = np.fromfile(path, dtype=np.float32).reshape(-1, 256)
                self._cache[name] = table
            return table

    def table(self, spec: str) -> npt.NDArray[np.float32]:
        """The (rows, 256) style table of a voice or a blend like ``af_heart:0.7+af_bella:0.3``."""
        try:
            parts = parse_blend(spec)
        except ValueError as exc:
            raise UnknownVoice(f"bad voice {spec!r}: {exc}") from None
        if len(parts) == 1:
            return self._load(parts[0][0])
        mixed = sum(weight * self._load(name) for name, weight in parts)
        return np.asarray(mixed, dtype=np.float32)

    def style(self, spec: str, n_tokens: int) -> npt.NDArray[np.float32]:
        table = self.table(spec)
        row = min(max(n_tokens - 1, 0), len(table) - 1)
        return table[row : row + 1]


class KokoroEngine:
    name = "kokoro"
    sample_rate = SAMPLE_RATE
    alphabet: Alphabet = KOKORO_ALPHABET
    max_phonemes = MAX_TOKENS

    def __init__(
        self,
        session: OnnxSession,
        voices_dir: Path,
        streamer: KokoroStreamer | None = None,
        windows: WindowConfig | None = None,
    ) -> None:
        self._session = session
        self._voices = KokoroVoices(voices_dir)
        self._voice_ids = self._voices.ids()
        self._streamer = streamer
        self._windows = windows or WindowConfig()

    @property
    def window_cost(self) -> WindowCost | None:
        return self._streamer.cost if self._streamer is not None else None

    @property
    def streamer(self) -> KokoroStreamer | None:
        """The windowed decoder (None in sentence mode)."""
        return self._streamer

    @property
    def windowed(self) -> bool:
        return self._streamer is not None

    @property
    def session(self) -> OnnxSession:
        return self._session

    @property
    def style_tables(self) -> KokoroVoices:
        return self._voices

    def voices(self) -> list[VoiceInfo]:
        infos = (kokoro_voice_info(v, SAMPLE_RATE) for v in self._voice_ids)
        return [info for info in infos if info is not None]

    def check_voice(self, voice: str) -> None:
        self._voices.table(voice)

    def unknown_symbols(self, phonemes: str) -> set[str]:
        return {ch for ch in phonemes if ch not in KOKORO_VOCAB}

    def learn_voice_statistics(
        self,
        texts: Sequence[str],
        phonemize: Callable[[str], str],
        per_voice: int = 3,
        thorough: str | None = None,
        *,
        learn: bool = True,
    ) -> int:
        """Teach the windowed decoder every voice's statistics, so that a stream's first sentence does
        not start from a short window's own (see :mod:`~voxserve.engines.stats_model`).

        Each voice speaks ``per_voice`` of ``texts`` (voices take turns through the list, so the
        regression hears them all; the ``thorough`` voice, the default one, speaks them all), each
        decoded in one window for its exact statistics. They fit the
        regression from frame-rate to vocoder statistics and teach the voice book (the fallback where no
        prediction applies). The result is saved next to the split graphs and reloaded next time; ``learn=False``
        only reloads (a quick start, such as the CLI's). ``phonemize`` turns a text into this engine's
        phonemes. Returns how many sentences were decoded now (0 when loaded or not windowed).
        """
        streamer = self._streamer
        if streamer is None or streamer.voice_stats is None or streamer.stats_model is None:
            return 0
        record = streamer.graph_dir / "kokoro_split.json"
        built = record.read_text() if record.is_file() else ""
        tag = hashlib.sha256("|".join([built, str(per_voice), str(thorough), *texts]).encode()).hexdigest()
        book_path, model_path = streamer.graph_dir / "voice_stats.npz", streamer.graph_dir / "stats_model.npz"
        if (streamer.voice_stats.load(book_path, tag) and streamer.stats_model.load(model_path, tag)) or not learn:
            return 0
        sentences = [phonemize(text) for text in texts]
        spoken: dict[str, list[tuple[dict[str, Array], dict[str, Array]]]] = {}
        for i, voice in enumerate(self._voice_ids):
            turns = range(len(sentences)) if voice == thorough else range(i * per_voice, (i + 1) * per_voice)
            for k in turns:
                ids = np.array(self.token_ids(sentences[k % len(sentences)]), dtype=np.int64)
                front = self._front(streamer, ids, voice, 1.0, None)
                spoken.setdefault(voice, []).append(streamer.exact_statistics(front, voice))
        streamer.stats_model.fit(spoken)
        streamer.voice_stats.save(book_path, tag)
        streamer.stats_model.save(model_path, tag)
        return sum(len(pairs) for pairs in spoken.values())

    def token_ids(self, phonemes: str) -> list[int]:
        unknown = self.unknown_symbols(phonemes)
        if unknown:
            raise InvalidInput(f"phonemes not in Kokoro's vocabulary: {' '.join(sorted(unknown))}")
        return [KOKORO_VOCAB[ch] for ch in phonemes]

    def synthesize(self, phonemes: str, voice: str, speed: float = 1.0) -> EngineAudio:
        check_speed(speed)
        pieces = [self._run(piece, voice, speed) for piece in split_phonemes(phonemes, MAX_TOKENS)]
        if not pieces:
            raise InvalidInput("nothing to synthesize: the phoneme string is empty")
        samples = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
        return EngineAudio(samples=samples, sample_rate=SAMPLE_RATE)

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
        """Windowed decoding when split graphs are loaded (first audio after a fraction of the segment);
        else one model call per piece of at most 510 phonemes."""
        check_speed(speed)
        pieces = split_phonemes(phonemes, MAX_TOKENS)
        for i, piece in enumerate(pieces):
            more = i < len(pieces) - 1  # another model input follows this one's last piece
            if self._streamer is None:
                audio = self._run(piece, voice, speed, control)
                yield EngineAudio(samples=audio, sample_rate=SAMPLE_RATE, first=True, last=True, more_runs=more)
                continue
            first = first_window_s if i == 0 else None
            for audio_piece in self._stream_windows(piece, voice, speed, first, next_window_s, control):
                yield replace(audio_piece, more_runs=True) if more and audio_piece.last else audio_piece

    def _front(
        self,
        streamer: KokoroStreamer,
        ids: npt.NDArray[np.int64],
        voice: str,
        speed: float,
        control: RunControl | None,
    ) -> KokoroFront:
        """The sentence's front, with the pad caps of this engine's window settings."""
        w = self._windows
        return streamer.front(
            ids,
            self._voices.style(voice, len(ids)),
            speed,
            max_pad_frames=w.frames(w.max_pad_s, FRAME_S),
            max_lead_frames=w.frames(w.max_lead_s, FRAME_S),
            control=control,
        )

    def _stream_windows(
        self,
        phonemes: str,
        voice: str,
        speed: float,
        first_window_s: float | None,
        next_window_s: Callable[[], float | None] | None,
        control: RunControl | None,
    ) -> Iterator[EngineAudio]:
        assert self._streamer is not None
        ids = np.array(self.token_ids(phonemes), dtype=np.int64)
        if len(ids) == 0:
            raise InvalidInput("nothing to synthesize: the phoneme string is empty")
        w = self._windows
        front = self._front(self._streamer, ids, voice, speed, control)
        first, following, largest = w.plan(first_window_s, FRAME_S)
        # a stream's first segment (or that of a stream about to run dry) may skip the sentence's
        # statistics before its first window (window_early_stats=false) and gets less right context on
        # it: both are work before its first audio; other segments are made well ahead of playback
        urgent = first_window_s is not None and first_window_s <= w.first_s
        yield from self._streamer.decode_windows(
            front,
            first,
            following,
            growth=w.growth,
            max_window_frames=largest,
            voice=voice,
            early_stats=w.early_stats or not urgent,
            first_context_frames=w.frames(w.first_context_s, FRAME_S) if urgent else None,
            next_window_frames=w.sizer(next_window_s, FRAME_S),
            control=control,
        )

    def _run(
        self, phonemes: str, voice: str, speed: float, control: RunControl | None = None
    ) -> npt.NDArray[np.float32]:
        ids = self.token_ids(phonemes)
        if not ids:
            raise InvalidInput("nothing to synthesize: the phoneme string is empty")
        style = self._voices.style(voice, len(ids))
        tokens = np.array([[KOKORO_PAD_ID, *ids, KOKORO_PAD_ID]], dtype=np.int64)
        feed = {"tokens": tokens, "style": style, "speed": np.array([speed], dtype=np.float32)}
        (audio,) = run_graph(self._session, ["audio"], feed, f"Kokoro on {len(ids)} phonemes", control)
        return np.asarray(audio, dtype=np.float32).reshape(-1)
