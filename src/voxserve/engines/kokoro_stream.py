"""Model-level streaming for Kokoro: run the front once per sentence, then decode audio in windows.

Uses the graphs made by :func:`voxserve.models.graphs.build_split_graphs`:

1. ``front`` (tokens → per-token durations and features), our own alignment in numpy (so pad durations
   can be capped), ``prosody`` (aligned content, F0 and energy over the whole sentence) and ``stats``
   (whole-sentence statistics of the decoder's frame-rate instance norms; cheap);
2. ``decoder`` on windows of frames with context on both sides, cropped and crossfaded.

Two things make a window differ from the same frames of a whole-sentence decode:

* the harmonic source integrates F0 into a phase: each window gets the cumulative phase of the frames
  before it (``phase0``), computed here from F0 exactly as the graph does;
* the decoder's 54 instance norms average over time: the frame-rate ones get the whole-sentence
  statistics, the vocoder ones the running means of the windows decoded so far. This is an
  approximation; with the int8 graph, tiny input changes already move the output by the dynamic
  quantization's noise, so windowed audio is compared with PESQ/STOI, not sample by sample.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxserve.engines.batching import BatchPolicy, BatchRunner
from voxserve.engines.onnx import RunControl, SessionFactory
from voxserve.engines.stats_model import StatsRegression
from voxserve.engines.vocoder_stats import Corrections, RunningStats, SegmentStats, VoiceStatsBook
from voxserve.engines.windowing import (
    CrossfadeJoiner,
    Window,
    WindowCost,
    decode_pieces,
    first_window_end,
    iter_windows,
    run_graph,
)
from voxserve.errors import InvalidInput
from voxserve.types import EngineAudio

SAMPLE_RATE = 24_000
HOP = 600  # samples per decoder frame (25 ms)
F0_PER_FRAME = 2
SOURCE_UPSAMPLE = 300  # samples per F0 value; the graph scales the cumulative phase by this
HARMONICS = np.arange(1, 10, dtype=np.float32)  # fundamental + 8 overtones
MAX_TOKENS = 512  # including the two pads
# weight, in frames, of a sentence's predicted vocoder statistics against its windows' own (first-segment
# PESQ-wb with 1000 and 5000 about equal, 300 lower)
PREDICTED_FRAMES = 1000

Array = npt.NDArray[np.float32]


@dataclass(frozen=True, eq=False)
class KokoroFront:
    """Everything the decoder needs for one sentence, plus its durations.

    ``durations`` holds frames per token, pads included (first and last entries).
    ``content`` is [1, 512, F]; ``f0`` and ``energy`` are [1, 2F]; ``style`` is [1, 256].
    """

    durations: npt.NDArray[np.int64]
    content: Array
    f0: Array
    energy: Array
    style: Array

    @property
    def frames(self) -> int:
        return int(self.content.shape[2])

    @property
    def phoneme_samples(self) -> npt.NDArray[np.int64]:
        """Samples per phoneme symbol, pads excluded."""
        return (self.durations[1:-1] * HOP).astype(np.int64)


def alignment_matrix(durations: npt.NDArray[np.int64]) -> Array:
    """One-hot [1, tokens, frames] matrix repeating token ``i`` for ``durations[i]`` frames."""
    frames = int(durations.sum())
    owner = np.repeat(np.arange(len(durations)), durations)
    matrix = np.zeros((1, len(durations), frames), dtype=np.float32)
    matrix[0, owner, np.arange(frames)] = 1.0
    return matrix


def source_phase(f0: Array) -> npt.NDArray[np.float64]:
    """Cumulative harmonic-source phase after each F0 value, [2F, 9], in the graph's unit.

    Mirrors the graph: per-sample phase increment ``frac(f0 * k / 24000)`` for harmonics k=1..9, summed
    over F0 values. Kept modulo 1/300 (a whole cycle once the graph multiplies by 300).
    """
    inc = f0.reshape(-1, 1).astype(np.float32) * HARMONICS / np.float32(SAMPLE_RATE)
    inc = inc - np.floor(inc)
    total = np.cumsum(inc.astype(np.float64), axis=0)
    return np.asarray(np.mod(total * SOURCE_UPSAMPLE, 1.0) / SOURCE_UPSAMPLE, dtype=np.float64)


class KokoroStreamer:
    """Front + windowed decoder for Kokoro v1.0, from split graphs in ``graph_dir``.

    ``context_frames`` frames of context are decoded on each side of a window and cropped;
    ``crossfade_ms`` of the overlap is crossfaded (it must fit in the context). ``corrections`` says
    which of the window corrections apply (all, in the server; :class:`Corrections`); ``early_stats``
    computes the sentence's frame-rate statistics before the first window instead of after it (a truer
    first window, slightly later first audio). ``batch`` lets windows of concurrent
    streams with the same size share one decoder call (:mod:`voxserve.engines.batching`).
    """

    def __init__(
        self,
        factory: SessionFactory,
        graph_dir: Path,
        *,
        context_frames: int = 8,
        crossfade_ms: float = 25.0,
        corrections: Corrections = Corrections(),
        early_stats: bool = False,
        batch: BatchPolicy | None = None,
    ) -> None:
        self.graph_dir = graph_dir
        self.front_session = factory.create(graph_dir / "kokoro_front.onnx")
        self.prosody_session = factory.create(graph_dir / "kokoro_prosody.onnx")
        self.stats_session = factory.create(graph_dir / "kokoro_stats.onnx")
        self.decoder_session = factory.create(graph_dir / "kokoro_decoder.onnx")
        self.cost = WindowCost(context_frames * HOP / SAMPLE_RATE)  # learned work per window, for budgets
        self.decoder = BatchRunner(self.decoder_session, batch or BatchPolicy(), key_inputs=("content",))
        self.context_frames = context_frames
        self.crossfade = round(crossfade_ms * SAMPLE_RATE / 1000)
        if self.crossfade > context_frames * HOP:
            raise InvalidInput(f"crossfade of {crossfade_ms} ms does not fit in {context_frames} context frames")
        self.corrections = corrections
        self.early_stats = early_stats
        self.voice_stats = VoiceStatsBook() if corrections.voice_stats else None
        self.stats_model = StatsRegression() if corrections.voice_stats else None  # fitted by KokoroEngine
        self._stat_outputs = [o.name for o in self.stats_session.get_outputs()]
        frame_names = {name.replace("stat_out_", "stat_in_") for name in self._stat_outputs}
        stat_inputs = [i.name for i in self.decoder_session.get_inputs() if i.name.startswith("stat_in_")]
        self._frame_names = sorted(frame_names)
        self._vocoder_names = sorted(set(stat_inputs) - frame_names)
        self._own_names = self._vocoder_names + self._frame_names  # a window's own statistics, decoder outputs
        self._outputs = ["audio", *(name.replace("stat_in_", "stat_out_") for name in self._own_names)]

    def close(self) -> None:
        """Stop the batching thread (if any); calls still waiting fail with EngineFailure."""
        self.decoder.close()

    def front(
        self,
        token_ids: npt.NDArray[np.int64],
        style: Array,
        speed: float = 1.0,
        *,
        max_pad_frames: int | None = None,
        max_lead_frames: int | None = None,
        control: RunControl | None = None,
    ) -> KokoroFront:
        """Durations and decoder inputs for one sentence.

        ``token_ids`` are phoneme ids without pads (the pads are added here); ``style`` is the voice's
        [1, 256] row for this length. The model gives the leading/trailing pads ~0.3–0.5 s of
        near-silence. Prosody (F0, energy) is always predicted over the model's own durations: its
        LSTMs read the pads, and shortening them blurs the first and last words. Then only the last
        ``max_lead_frames`` of the leading pad (default ``max_pad_frames``) and the first
        ``max_pad_frames`` of the trailing one are kept for decoding: they are decoded and trimmed, so
        every kept pad frame costs time (on a stream's first window, time to first audio). ``None``
        keeps the model's durations.
        """
        ids = np.asarray(token_ids, dtype=np.int64).reshape(-1)
        if len(ids) == 0 or len(ids) + 2 > MAX_TOKENS:
            raise InvalidInput(f"Kokoro takes 1..{MAX_TOKENS - 2} phoneme ids per call, got {len(ids)}")
        if speed <= 0:
            raise InvalidInput(f"speed must be positive, got {speed}")
        tokens = np.concatenate([[0], ids, [0]]).reshape(1, -1)
        style = np.asarray(style, dtype=np.float32).reshape(1, 256)
        durations_f, prosody_features, content_features = run_graph(
            self.front_session,
            None,
            {"tokens": tokens, "style": style, "speed": np.array([speed], dtype=np.float32)},
            f"Kokoro front on {len(ids)} phonemes",
            control,
        )
        durations = np.maximum(durations_f.reshape(-1).astype(np.int64), 1)
        content, f0, energy = run_graph(
            self.prosody_session,
            None,
            {
                "prosody_features": prosody_features,
                "content_features": content_features,
                "alignment": alignment_matrix(durations),
                "style": style,
            },
            "Kokoro prosody",
            control,
        )
        lead_cap = max_pad_frames if max_lead_frames is None else max_lead_frames
        drop_lead = max(0, int(durations[0]) - max(lead_cap, 1)) if lead_cap is not None else 0
        drop_tail = max(0, int(durations[-1]) - max(max_pad_frames, 1)) if max_pad_frames is not None else 0
        if drop_lead or drop_tail:
            end = int(durations.sum()) - drop_tail
            durations[0] -= drop_lead
            durations[-1] -= drop_tail
            content = np.ascontiguousarray(content[:, :, drop_lead:end])
            f0 = np.ascontiguousarray(f0[:, F0_PER_FRAME * drop_lead : F0_PER_FRAME * end])
            energy = np.ascontiguousarray(energy[:, F0_PER_FRAME * drop_lead : F0_PER_FRAME * end])
        return KokoroFront(durations, content, f0, energy, style)

    def sentence_frame_stats(self, front: KokoroFront, control: RunControl | None = None) -> dict[str, Array]:
        """Whole-sentence means of the decoder's frame-rate instance norms, keyed by decoder input name."""
        stats = run_graph(
            self.stats_session,
            self._stat_outputs,
            {"style": front.style, "content": front.content, "f0": front.f0, "energy": front.energy},
            "Kokoro decoder statistics",
            control,
        )
        return {name.replace("stat_out_", "stat_in_"): v for name, v in zip(self._stat_outputs, stats, strict=True)}

    def _predicted(
        self, voice: str | None, sentence: Mapping[str, Array], decoded: list[tuple[dict[str, Array], int]]
    ) -> RunningStats | None:
        """Running vocoder statistics that start from the sentence's predicted ones (None: no prediction
        for this voice), with the windows decoded so far added."""
        if voice is None or self.stats_model is None or not self.corrections.running_stats:
            return None
        predicted = self.stats_model.predict(voice, sentence)
        if predicted is None:
            return None
        running = RunningStats(self._vocoder_names, (predicted, PREDICTED_FRAMES))
        for means, span in decoded:
            running.add(means, span)
        return running

    def exact_statistics(
        self, front: KokoroFront, voice: str | None = None
    ) -> tuple[dict[str, Array], dict[str, Array]]:
        """The sentence's frame-rate statistics and the vocoder statistics of its whole decode (exact, at
        the cost of decoding it): what :class:`StatsRegression` learns from. With ``voice``, the decode
        also teaches the voice book."""
        _, means = self._run(front, Window(0, front.frames, 0, front.frames), None, None, None)
        if voice is not None and self.voice_stats is not None:
            self.voice_stats.record(voice, means, front.frames)
        return self.sentence_frame_stats(front), {name: means[name] for name in self._vocoder_names}

    def decode(self, front: KokoroFront, start: int = 0, end: int | None = None) -> Array:
        """Decode frames ``[start, end)`` in one call with the window's own statistics.

        Over the whole sentence this is the monolithic graph's audio, sample for sample.
        """
        end = front.frames if end is None else end
        audio, _ = self._run(front, Window(start, end, start, end), None, None, None)
        return audio

    def _run(
        self,
        front: KokoroFront,
        window: Window,
        phase: npt.NDArray[np.float64] | None,
        running: RunningStats | None,
        frame: Mapping[str, Array] | None,
        control: RunControl | None = None,
    ) -> tuple[Array, dict[str, Array]]:
        """Decode one window; ``frame`` holds the frame-rate statistics and ``mix_frame`` (None: its own)."""
        a, b = window.ctx_start, window.ctx_end
        phase0 = np.zeros((1, 1, 9), dtype=np.float32)
        if phase is not None and a > 0:
            phase0[0, 0] = phase[a * F0_PER_FRAME - 1].astype(np.float32)
        feeds: dict[str, Array] = {
            "style": front.style,
            "content": np.ascontiguousarray(front.content[:, :, a:b]),
            "f0": np.ascontiguousarray(front.f0[:, a * F0_PER_FRAME : b * F0_PER_FRAME]),
            "energy": np.ascontiguousarray(front.energy[:, a * F0_PER_FRAME : b * F0_PER_FRAME]),
            "phase0": phase0,
        }
        feeds.update(frame or RunningStats(self._frame_names, mix="mix_frame").feeds(b - a))
        feeds.update((running or RunningStats(self._vocoder_names)).feeds(b - a))
        what = f"Kokoro decoder on frames {a}..{b}"
        audio, *own = self.decoder.run(self._outputs, feeds, what, control)
        means = dict(zip(self._own_names, own, strict=True))
        return np.asarray(audio, dtype=np.float32).reshape(-1), means

    def decode_windows(
        self,
        front: KokoroFront,
        first_window_frames: int = 10,
        window_frames: int = 80,
        *,
        growth: float = 1.0,
        max_window_frames: int | None = None,
        voice: str | None = None,
        early_stats: bool | None = None,
        first_context_frames: int | None = None,
        next_window_frames: Callable[[], int] | None = None,
        control: RunControl | None = None,
    ) -> Iterator[EngineAudio]:
        """Yield the sentence's audio in pieces: ``first_window_frames`` of speech first, then larger windows.

        The first window also covers the leading pad (so its piece holds real speech). Its frame-rate
        statistics are the sentence's when ``early_stats`` (default: the streamer's setting), else its
        own, and the sentence's are computed once it is yielded, for the later windows: ~25 ms sooner
        first audio, but a short first window's own statistics blur the sentence's first word a little.
        ``first_context_frames`` (at least the crossfade) replaces the right context of the first window
        only: each frame of it is work before first audio. ``next_window_frames`` sizes each later
        window just before it is cut (see :func:`~voxserve.engines.windowing.iter_windows`). Vocoder
        statistics start from ``voice``'s learned average (when known) and follow the sentence's
        windows as they are decoded; each window's own statistics are added to the voice's average.
        Pieces are contiguous and sum to ``front.frames * 600`` samples. The first piece carries
        ``phoneme_durations`` and ``lead_in``; the last carries ``tail``.
        """
        lead = int(front.durations[0])
        tail = int(front.durations[-1])
        ctx = self.context_frames
        first_end = first_window_end(front.frames, lead + first_window_frames, window_frames)
        windows = iter_windows(
            front.frames,
            lead + first_window_frames,
            window_frames,
            ctx,
            ctx,
            growth=growth,
            max_size=max_window_frames,
            first_right=None if first_context_frames is None else max(first_context_frames, -(-self.crossfade // HOP)),
            next_size=next_window_frames,
        )
        single = first_end == front.frames  # one window: its own statistics are exact, a prior would blur them
        # the sentence's frame-rate statistics cost about as much as a small window: not before the second
        # window when the first ones are small (it would be late for playback), but before the third
        small_start = front.frames - first_end > window_frames and first_window_frames < (
            max_window_frames or window_frames
        )
        early = self.early_stats if early_stats is None else early_stats
        stats = self._segment_stats(front, voice, single, 0 if early else 2 if small_start else 1, control)
        phase = source_phase(front.f0) if self.corrections.carry_phase else None

        def decode(index: int, window: Window) -> Array:
            span = window.ctx_end - window.ctx_start
            audio, means = self._run(front, window, phase, stats.running, stats.frame_feeds(span), control)
            stats.add(index, means, span)
            return audio

        return decode_pieces(
            windows,
            front.frames,
            decode,
            joiner=CrossfadeJoiner(HOP, self.crossfade),
            cost=self.cost,
            frame_s=HOP / SAMPLE_RATE,
            sample_rate=SAMPLE_RATE,
            phoneme_durations=front.phoneme_samples,
            lead_in=lead * HOP,
            tail=tail * HOP,
            before=stats.before,
        )

    def _segment_stats(
        self, front: KokoroFront, voice: str | None, single: bool, stats_at: int, control: RunControl | None
    ) -> SegmentStats:
        """The statistics policy for one sentence's windows, from this streamer's switches (see
        :class:`~voxserve.engines.vocoder_stats.SegmentStats`)."""
        book = self.voice_stats if voice is not None else None
        running = early_frame = None
        if self.corrections.running_stats:
            prior = book.prior(voice) if book and voice and not single else None
            running = RunningStats(self._vocoder_names, prior)
            if prior is not None:
                # until the sentence's frame-rate statistics are computed, the voice's average beats a
                # short window's own
                early_frame = RunningStats(self._frame_names, prior, mix="mix_frame")
        record = None
        if book is not None and voice is not None:

            def record(means: Mapping[str, Array], span: int, book: VoiceStatsBook = book, voice: str = voice) -> None:
                book.record(voice, means, span)

        return SegmentStats(
            running,
            early_frame,
            stats_at if self.corrections.sentence_stats and not single else None,
            lambda: self.sentence_frame_stats(front, control),
            lambda sentence, decoded: self._predicted(voice, sentence, decoded),
            record,
        )
