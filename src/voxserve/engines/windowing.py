"""Windowed decoding helpers shared by the streaming engines: window plans and the crossfade joiner.

A sentence of ``F`` decoder frames is cut into windows ``[start, end)``; each is decoded with up to
``left``/``right`` frames of context on either side, the context is cropped, and consecutive windows are
joined with a short raised-cosine crossfade taken from the right context of the earlier window. The
pieces a joiner emits have exactly ``(end - start) * hop`` samples, so their concatenation has the length
of a whole-sentence decode.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from voxserve.engines.onnx import OnnxSession, RunControl, current_thread_budget
from voxserve.engines.preemption import run_preemptible, work_timer
from voxserve.errors import Cancelled, EngineFailure, InvalidInput
from voxserve.types import EngineAudio, FloatAudio


@dataclass(frozen=True)
class WindowConfig:
    """How an engine cuts a segment into decoder windows (seconds of audio; engines convert to frames)."""

    # The first window of a stream is small so first audio comes fast; each next one must be decoded
    # (with its context frames: a fixed cost per window) before the audio already out has played, or
    # playback stalls. This fixed schedule applies only until window costs are learned (the warm-up
    # teaches them); afterwards stream/window_budget.py sizes each window from the learned cost.
    first_s: float = 0.4
    next_s: float = 0.5
    growth: float = 1.4
    max_s: float = 4.0
    max_pad_s: float = 0.1  # cap on the model's pad-token durations
    # cap on the leading pad alone: decoded as left context, then trimmed up to the first sound. The
    # model starts a word's first consonant inside these frames; with fewer of them before it, the
    # decoder's convolutions see the edge of the input there and the onset comes out weak or changed
    max_lead_s: float = 0.1
    context_s: float = 0.2  # decoded on each side of a window, then cropped
    # > 0: window sizes are multiples of this, so windows of concurrent streams often have the same
    # size and can share a batched decoder call (voxserve.engines.batching)
    quantum_s: float = 0.0
    # the sentence's frame-rate statistics before a stream's first window too: its first segment sounds
    # closer to a whole-sentence decode (voxserve eval measures it) ...
    early_stats: bool = True
    # ... paid for by less right context on that first window (less work before first audio)
    first_context_s: float = 0.1

    def frames(self, seconds: float, frame_s: float) -> int:
        return max(1, round(seconds / frame_s))

    def window_frames(self, seconds: float, frame_s: float) -> int:
        """A window size in frames, rounded to the quantum when there is one."""
        frames = self.frames(seconds, frame_s)
        if self.quantum_s <= 0:
            return frames
        quantum = self.frames(self.quantum_s, frame_s)
        return max(quantum, round(frames / quantum) * quantum)

    def plan(self, first_window_s: float | None, frame_s: float) -> tuple[int, int, int]:
        """(first, second, largest) window sizes in frames for one segment.

        A stream's first segment (``first_window_s`` given) starts small and grows, for fast first
        audio; later segments are made while earlier audio plays, so they use the largest windows
        (fewest seams, least context overhead).
        """
        largest = self.window_frames(self.max_s, frame_s)
        if first_window_s is None:
            return largest, largest, largest
        first = min(self.window_frames(first_window_s, frame_s), largest)
        return first, max(first, self.window_frames(self.next_s, frame_s)), largest

    def sizer(self, window_s: Callable[[], float | None] | None, frame_s: float) -> Callable[[], int] | None:
        """``window_s`` (seconds, ``None`` = the largest) as window frames, for :func:`iter_windows`."""
        if window_s is None:
            return None
        largest = self.window_frames(self.max_s, frame_s)

        def frames() -> int:
            seconds = window_s()
            return largest if seconds is None else min(self.window_frames(seconds, frame_s), largest)

        return frames


@dataclass(frozen=True)
class Window:
    """Frames ``[start, end)`` are emitted; frames ``[ctx_start, ctx_end)`` are decoded."""

    start: int
    end: int
    ctx_start: int
    ctx_end: int


def iter_windows(
    frames: int,
    first: int,
    size: int,
    left: int,
    right: int,
    *,
    growth: float = 1.0,
    max_size: int | None = None,
    first_right: int | None = None,
    next_size: Callable[[], int] | None = None,
) -> Iterator[Window]:
    """Cut ``frames`` into a first window of ``first`` frames then windows of ``size`` frames.

    With ``growth`` > 1 each later window is that much larger than the one before, up to ``max_size``:
    small windows early keep playback fed right after the first audio, large ones later cost less
    context overhead. ``next_size`` (asked just before each window after the first is cut) replaces
    that schedule: a stream sizes each window by how much audio it has ahead of playback. A remainder
    shorter than half of the next window is merged into the window before it, unless that is a small
    first window (it is there for fast first audio). ``first_right`` (default ``right``) is the first
    window's right context.
    """
    if first < 1 or size < 1 or left < 0 or right < 0 or growth < 1.0:
        raise InvalidInput(f"bad window plan first={first} size={size} left={left} right={right} growth={growth}")
    cap = max(size, max_size or size)
    step = float(size)  # the fixed schedule's next window
    first_end = first_window_end(frames, first, size)
    start, index = 0, 0
    while start < frames:
        if index == 0:
            width, following = first, size
        else:
            width = int(step) if next_size is None else max(1, next_size())
            step = min(step * growth, float(cap))
            following = int(step) if next_size is None else width
        end = first_end if index == 0 else min(frames, start + width)
        if index and frames - end < following // 2:
            end = frames
        ctx_right = right if index or first_right is None else first_right
        yield Window(start, end, max(0, start - left), min(frames, end + ctx_right))
        start, index = end, index + 1


def first_window_end(frames: int, first: int, size: int) -> int:
    """Where :func:`iter_windows` ends the first window: after ``first`` frames, or at the end when
    the rest is under half a window and the first window is not a small fast-start one."""
    end = min(frames, first)
    return frames if frames - end < size // 2 and first >= size else end


def fade_curves(length: int) -> tuple[FloatAudio, FloatAudio]:
    """Raised-cosine fade-out/fade-in pair; the two sum to 1 (right for near-identical signals)."""
    t = (np.arange(length, dtype=np.float64) + 0.5) / max(length, 1)
    fade_in = np.sin(0.5 * np.pi * t) ** 2
    return (1.0 - fade_in).astype(np.float32), fade_in.astype(np.float32)


class CrossfadeJoiner:
    """Turns decoded windows (context included) into contiguous, crossfaded pieces."""

    def __init__(self, hop: int, crossfade: int) -> None:
        self.hop = hop
        self.crossfade = crossfade
        self._fade_out, self._fade_in = fade_curves(crossfade)
        self._tail: FloatAudio | None = None

    def push(self, window: Window, decoded: FloatAudio) -> FloatAudio:
        """Return the samples of ``[window.start, window.end)`` from ``decoded`` (covering the context span)."""
        hop = self.hop
        lo = (window.start - window.ctx_start) * hop
        hi = (window.end - window.ctx_start) * hop
        piece = np.array(decoded[lo:hi], dtype=np.float32, copy=True)
        if self._tail is not None:
            n = min(len(self._tail), len(piece))
            piece[:n] = self._tail[:n] * self._fade_out[:n] + piece[:n] * self._fade_in[:n]
        tail = decoded[hi : hi + self.crossfade]
        self._tail = np.asarray(tail, dtype=np.float32) if len(tail) == self.crossfade and self.crossfade else None
        return piece


def decode_pieces(
    windows: Iterator[Window],
    frames: int,
    decode: Callable[[int, Window], FloatAudio],
    *,
    joiner: CrossfadeJoiner,
    cost: WindowCost,
    frame_s: float,
    sample_rate: int,
    phoneme_durations: npt.NDArray[np.int64] | None,
    lead_in: int,
    tail: int,
    before: Callable[[int], None] | None = None,
) -> Iterator[EngineAudio]:
    """The window loop every windowed engine shares.

    For each window: ``before(i)`` (work that is not the window's own, e.g. statistics it needs), then
    the window is cut (``windows`` may size it then, from the time left), then ``decode(i, window)``
    over the window and its context, timed into ``cost`` with the threads it ran on; the decoded audio
    is cropped and crossfaded by ``joiner`` and yielded as a piece. ``before`` runs before the cut so
    that a window sized by its listener's lead is sized after the work it waits behind, which the
    window's cost does not include. The windows must cover ``frames``; the first piece carries
    ``phoneme_durations`` and ``lead_in`` (samples), the last ``tail`` (samples).
    """
    windows = iter(windows)
    i, end = 0, 0
    while end < frames:
        if before is not None:
            before(i)
        window = next(windows)
        with work_timer() as spent:
            audio = decode(i, window)
        cost.record((window.ctx_end - window.ctx_start) * frame_s, spent(), current_thread_budget())
        first, last, end = i == 0, window.end == frames, window.end
        i += 1
        yield EngineAudio(
            samples=joiner.push(window, audio),
            sample_rate=sample_rate,
            first=first,
            last=last,
            phoneme_durations=phoneme_durations if first else None,
            lead_in=lead_in if first else 0,
            tail=tail if last else 0,
        )


class WindowCost:
    """Running fit of what a decoder window costs: ``seconds = a0 + b * decoded audio seconds``.

    Windows are recorded with the audio they decoded (context included) and the intra-op threads they
    ran with (``None``: the session's own); :meth:`fit` answers for a window in the middle of a
    segment, which decodes ``context_s`` more on each side than it emits. Thread-safe. ``fit()`` is
    None until ``min_samples`` windows of clearly different sizes are known for those threads.
    """

    def __init__(self, context_s: float, history: int = 256, min_samples: int = 4) -> None:
        self.context_s = context_s
        self._history = history
        self._samples: dict[int | None, collections.deque[tuple[float, float]]] = {}
        self._counts: collections.Counter[int | None] = collections.Counter()
        self._fits: dict[int | None, tuple[float, float] | None] = {}  # until the samples change
        self._version = 0  # bumped on every change to the samples
        self._lock = threading.Lock()
        self.min_samples = min_samples

    def record(self, decoded_s: float, seconds: float, threads: int | None = None) -> None:
        if decoded_s > 0 and seconds > 0:
            with self._lock:
                samples = self._samples.setdefault(threads, collections.deque(maxlen=self._history))
                samples.append((decoded_s, seconds))
                self._counts[threads] += 1
                self._changed()

    def clear(self) -> None:
        with self._lock:
            self._samples.clear()
            self._changed()

    def recorded(self, threads: int | None = None) -> int:
        """How many windows decoded at ``threads`` were ever recorded (forgotten ones included)."""
        with self._lock:
            return self._counts[threads]

    def fit(self, threads: int | None = None) -> tuple[float, float] | None:
        """(a, b): seconds of work per window (its context included) and per audio second it emits."""
        with self._lock:
            if threads in self._fits:
                return self._fits[threads]
            version = self._version
            samples = np.array(self._samples.get(threads, ()), dtype=np.float64).reshape(-1, 2)
        fit: tuple[float, float] | None = None
        if len(samples) >= self.min_samples and samples[:, 0].max() >= 2 * samples[:, 0].min():
            b, a0 = np.polyfit(samples[:, 0], samples[:, 1], 1)
            b = max(float(b), 1e-4)
            fit = max(float(a0), 0.0) + 2 * self.context_s * b, b
        with self._lock:
            if self._version == version:
                self._fits[threads] = fit
        return fit

    def _changed(self) -> None:
        """The samples changed: fits are made again (lock held)."""
        self._version += 1
        self._fits.clear()


def run_graph(
    session: OnnxSession,
    outputs: list[str] | None,
    feeds: dict[str, Any],
    what: str,
    control: RunControl | None = None,
) -> list[Any]:
    """``session.run`` with ONNX Runtime's errors turned into :class:`EngineFailure` naming ``what``,
    and a cancelled ``control`` (before or during the call) into :class:`Cancelled`. The worker pool
    may interrupt the call and have it made again (:mod:`~voxserve.engines.preemption`)."""
    if control is not None and control.cancelled:
        raise Cancelled(f"{what}: the stream was cancelled")
    try:
        return list(
            run_preemptible(
                lambda options: session.run(outputs, feeds, options),
                control.options if control is not None else None,
                lambda: control is not None and control.cancelled,
            )
        )
    except Exception as exc:  # ONNX Runtime errors have no common base class
        if control is not None and control.cancelled:
            raise Cancelled(f"{what}: the stream was cancelled") from exc
        raise EngineFailure(f"{what} failed: {exc}") from exc
