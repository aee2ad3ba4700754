"""Instance-norm statistics for windowed vocoder decoding: per window, per sentence and per voice.

Kokoro's vocoder normalizes each channel by its mean and variance over time. Decoding a window alone
would use the window's own statistics, which differ from the whole sentence's: short windows, and
windows that hold the leading silence, sound different. The decoder graph therefore takes prior
statistics and a mixing weight (see :func:`voxserve.models.graphs.add_stat_inputs`), and this module
supplies them:

* :class:`RunningStats` — frame-weighted means of the statistics of a sentence's windows decoded so
  far, optionally seeded with a voice's prior;
* :class:`SegmentStats` — for one sentence, which statistics each window decodes with, and when the
  sentence's own are computed;
* :class:`VoiceStatsBook` — per voice, the frame-weighted average of every window decoded with it,
  learned from traffic at no extra cost (the decoder outputs a window's own statistics anyway). A
  voice's sentence statistics vary much less between sentences than a 0.4 s window's do, so seeding
  a sentence's first window with them brings windowed audio closer to whole-sentence decoding
  (``bench/fidelity.py``). A voice not heard yet gets the average over all voices, which is still
  better than none.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxserve.models.fileio import write_atomic

Array = npt.NDArray[np.float32]
Means = dict[str, npt.NDArray[np.float64]]
Prior = tuple[Mapping[str, npt.NDArray[np.float64]], int]  # means and their weight in frames


@dataclass(frozen=True)
class Corrections:
    """What a windowed decode does so that its windows sound like the whole sentence; the server uses all.

    Each can be switched off to measure what it brings (``bench/fidelity.py --ablate``).
    """

    carry_phase: bool = True  # each window continues the harmonic source's phase of the frames before it
    sentence_stats: bool = True  # the sentence's frame-rate statistics (the stats graph), once per sentence
    running_stats: bool = True  # vocoder norms from the running means of the sentence's earlier windows
    voice_stats: bool = True  # per-voice priors and the sentence-statistics regression, learned from traffic


def save_tagged(path: Path, tag: str, arrays: Mapping[str, npt.NDArray[np.generic]]) -> None:
    """Write ``arrays`` to ``path`` (.npz, atomically), marked with ``tag`` (what they were learned from)."""
    buffer = io.BytesIO()
    np.savez(buffer, __tag__=np.frombuffer(tag.encode(), dtype=np.uint8), **arrays)  # type: ignore[arg-type]
    write_atomic(path, buffer.getvalue())


def load_tagged(path: Path, tag: str) -> dict[str, npt.NDArray[np.generic]] | None:
    """The arrays :func:`save_tagged` wrote to ``path`` with ``tag``; None if absent, unreadable or stale."""
    try:
        with np.load(path) as data:
            if bytes(data["__tag__"]).decode() != tag:
                return None
            return {key: data[key] for key in data.files if key != "__tag__"}
    except (OSError, ValueError, KeyError):
        return None


class RunningStats:
    """Frame-weighted running means of the vocoder's statistics over a sentence's decoded windows."""

    def __init__(self, names: list[str], prior: Prior | None = None, *, mix: str = "mix_vocoder") -> None:
        self.names = names
        self.mix = mix
        self.frames = 0
        self.sums: Means = {}
        if prior is not None:
            means, frames = prior
            self.add(means, frames)

    def add(self, means: Mapping[str, npt.NDArray[np.floating]], frames: int) -> None:
        if frames <= 0:
            return
        for name in self.names:
            value = np.asarray(means[name], dtype=np.float64) * frames
            self.sums[name] = self.sums[name] + value if name in self.sums else value
        self.frames += frames

    def feeds(self, window_frames: int) -> dict[str, Array]:
        """Decoder inputs: the prior means and the mix input (their weight against the window's own)."""
        if not self.frames:
            return {name: np.zeros((1, 1, 1), dtype=np.float32) for name in self.names} | {
                self.mix: np.zeros(1, dtype=np.float32)
            }
        out = {name: (self.sums[name] / self.frames).astype(np.float32) for name in self.names}
        out[self.mix] = np.array([self.frames / (self.frames + window_frames)], dtype=np.float32)
        return out


class VoiceStatsBook:
    """Per-voice average vocoder statistics, learned from the windows each voice has decoded.

    ``prior_frames`` is the most weight a voice's average gets when it seeds a sentence (300 frames =
    7.5 s of audio: it steadies the short windows of a stream's first segment, where a window's own
    statistics are the least like the sentence's; PESQ-wb of that segment vs whole-sentence decoding
    2.61 at 100 frames, 2.91 at 300, 2.96 at 1000, ``bench/fidelity.py --prior-frames N``).
    ``memory_frames`` bounds how much history the average keeps, so it follows a voice used at
    different speeds. Thread-safe.
    """

    def __init__(self, prior_frames: int = 300, memory_frames: int = 4000) -> None:
        self.prior_frames = prior_frames
        self.memory_frames = memory_frames
        self._lock = threading.Lock()
        self._book: dict[str, tuple[Means, int]] = {}

    _ALL = ""  # key of the average over every voice

    def record(self, voice: str, means: Mapping[str, npt.NDArray[np.floating]], frames: int) -> None:
        if frames <= 0:
            return
        new = {name: np.asarray(value, dtype=np.float64) for name, value in means.items()}
        with self._lock:
            for key in (voice, self._ALL):
                old, seen = self._book.get(key, ({}, 0))
                kept = min(seen, max(self.memory_frames - frames, 0))
                total = kept + frames
                mixed = {k: (old[k] * kept + v * frames) / total if old else v for k, v in new.items()}
                self._book[key] = (mixed, seen + frames)

    def prior(self, voice: str) -> tuple[Means, int] | None:
        """The voice's average statistics (else all voices') and the weight to give them; None when the
        book is empty."""
        with self._lock:
            entry = self._book.get(voice) or self._book.get(self._ALL)
        if entry is None:
            return None
        means, seen = entry
        return means, min(seen, self.prior_frames)

    def snapshot(self) -> VoiceStatsBook:
        """A copy that later records do not change (for measurements)."""
        copy = VoiceStatsBook(self.prior_frames, self.memory_frames)
        with self._lock:
            copy._book = dict(self._book)
        return copy

    def frames_seen(self, voice: str) -> int:
        with self._lock:
            return self._book.get(voice, ({}, 0))[1]

    def save(self, path: Path, tag: str) -> None:
        """Write every voice's average to ``path`` (.npz), marked with ``tag`` (what the stats came from)."""
        arrays: dict[str, npt.NDArray[np.generic]] = {}
        with self._lock:
            for voice, (means, frames) in self._book.items():
                arrays[f"{voice}|__frames__"] = np.array([frames], dtype=np.float64)
                arrays.update({f"{voice}|{name}": value.astype(np.float32) for name, value in means.items()})
        save_tagged(path, tag, arrays)

    def load(self, path: Path, tag: str) -> bool:
        """Take the averages saved in ``path`` if it was saved with ``tag``; False if absent or stale."""
        data = load_tagged(path, tag)
        if data is None:
            return False
        book: dict[str, tuple[Means, int]] = {}
        try:
            for key, value in data.items():
                voice, _, name = key.partition("|")
                if name == "__frames__":
                    continue
                means, frames = book.get(voice, ({}, int(data[f"{voice}|__frames__"][0])))
                means[name] = np.asarray(value, dtype=np.float64)
                book[voice] = (means, frames)
        except KeyError:
            return False
        with self._lock:
            self._book.update(book)
        return True


class SegmentStats:
    """Which statistics each window of one sentence decodes with, and what it learns from each.

    Before ``stats_at`` (``None``: never) the frame-rate norms use the voice's average when
    ``frame_prior`` is given, else each window's own; from window ``stats_at`` on they use the
    sentence's (``sentence()``, computed once then), and the vocoder's running means restart from
    ``predict`` (the sentence's predicted statistics with the windows decoded so far added; ``None``:
    keep the running means). The vocoder norms use ``running`` means (``None``: each window's own),
    to which every window's own statistics are added; ``record`` (the voice book) sees every window.
    """

    def __init__(
        self,
        running: RunningStats | None,
        frame_prior: RunningStats | None,
        stats_at: int | None,
        sentence: Callable[[], Mapping[str, Array]],
        predict: Callable[[Mapping[str, Array], list[tuple[dict[str, Array], int]]], RunningStats | None],
        record: Callable[[Mapping[str, Array], int], None] | None,
    ) -> None:
        self.running, self.early_frame, self.stats_at = running, frame_prior, stats_at
        self._sentence, self._predict, self._record = sentence, predict, record
        self.frame: dict[str, Array] | None = None
        self._decoded: list[tuple[dict[str, Array], int]] = []  # windows before the prediction

    def before(self, index: int) -> None:
        """Before window ``index``: the sentence's statistics, if this is where they are due."""
        if index != self.stats_at:
            return
        sentence = self._sentence()
        self.frame = dict(sentence) | {"mix_frame": np.ones(1, dtype=np.float32)}
        self.early_frame = None
        self.running = self._predict(sentence, self._decoded) or self.running

    def frame_feeds(self, span: int) -> Mapping[str, Array] | None:
        """The frame-rate statistics inputs for a window decoding ``span`` frames (None: its own)."""
        return self.early_frame.feeds(span) if self.early_frame is not None else self.frame

    def add(self, index: int, means: dict[str, Array], span: int) -> None:
        """Window ``index`` decoded ``span`` frames whose own statistics were ``means``."""
        for stats in (self.running, self.early_frame):
            if stats is not None:
                stats.add(means, span)
        if self.stats_at is not None and index < self.stats_at:  # added by the prediction
            self._decoded.append((means, span))
        if self._record is not None:
            self._record(means, span)
