"""Model-level streaming for Piper (VITS): run text encoder + duration predictor + flow once, decode in windows.

Uses ``piper_front.onnx`` and ``piper_decoder.onnx`` from :func:`voxserve.models.graphs.build_split_graphs`.
The front returns the latent ([1, 192, F], one frame = 256 samples) and the frames per phoneme id; the
HiFi-GAN decoder is purely convolutional, so windows with enough context reproduce the whole-sentence
audio to within float rounding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxserve.engines.onnx import RunControl, SessionFactory
from voxserve.engines.windowing import CrossfadeJoiner, WindowCost, decode_pieces, iter_windows, run_graph
from voxserve.errors import InvalidInput
from voxserve.types import EngineAudio, FloatAudio

HOP = 256  # samples per latent frame


@dataclass(frozen=True, eq=False)
class PiperFront:
    """The latent of one sentence, its phoneme ids and frames per id (BOS, pads and EOS included)."""

    latent: FloatAudio
    durations: npt.NDArray[np.int64]
    ids: npt.NDArray[np.int64]

    @property
    def frames(self) -> int:
        return int(self.latent.shape[2])


def symbol_samples(
    ids: npt.NDArray[np.int64], durations: npt.NDArray[np.int64], pad: int = 0, bos: int = 1, eos: int = 2
) -> tuple[npt.NDArray[np.int64], int, int]:
    """Samples per phoneme symbol (each interspersed pad folded into the symbol before it).

    Returns ``(per_symbol, lead_in, tail)``: the BOS id and the pad after it make the lead-in, EOS the tail.
    """
    per_symbol: list[int] = []
    lead = tail = 0
    for token, frames in zip(ids.tolist(), durations.tolist(), strict=True):
        samples = int(frames) * HOP
        if token == bos or (token == pad and not per_symbol):
            lead += samples
        elif token == eos:
            tail += samples
        elif token == pad:
            per_symbol[-1] += samples
        else:
            per_symbol.append(samples)
    return np.array(per_symbol, dtype=np.int64), lead, tail


class PiperStreamer:
    """Front + windowed HiFi-GAN decoder for a Piper voice, from split graphs in ``graph_dir``."""

    def __init__(
        self,
        factory: SessionFactory,
        graph_dir: Path,
        sample_rate: int = 22_050,
        *,
        context_frames: int = 17,
        crossfade_ms: float = 25.0,
    ) -> None:
        self.front_session = factory.create(graph_dir / "piper_front.onnx")
        self.decoder_session = factory.create(graph_dir / "piper_decoder.onnx")
        self.sample_rate = sample_rate
        self.context_frames = context_frames
        self.cost = WindowCost(context_frames * HOP / sample_rate)  # learned work per window, for budgets
        self.crossfade = round(crossfade_ms * sample_rate / 1000)
        if self.crossfade > context_frames * HOP:
            raise InvalidInput(f"crossfade of {crossfade_ms} ms does not fit in {context_frames} context frames")

    def front(
        self,
        phoneme_ids: npt.NDArray[np.int64],
        *,
        length_scale: float = 1.0,
        noise_scale: float = 0.667,
        noise_w: float = 0.8,
        control: RunControl | None = None,
    ) -> PiperFront:
        """Latent and durations for the full id sequence (BOS/pads/EOS as Piper lays them out).

        Noise scales of 0 make the result deterministic (the graph's two random draws are scaled by them).
        """
        ids = np.asarray(phoneme_ids, dtype=np.int64).reshape(1, -1)
        if ids.shape[1] == 0:
            raise InvalidInput("Piper needs at least one phoneme id")
        if length_scale <= 0:
            raise InvalidInput(f"length scale must be positive, got {length_scale}")
        latent, durations = run_graph(
            self.front_session,
            None,
            {
                "input": ids,
                "input_lengths": np.array([ids.shape[1]], dtype=np.int64),
                "scales": np.array([noise_scale, length_scale, noise_w], dtype=np.float32),
            },
            f"Piper front on {ids.shape[1]} phoneme ids",
            control,
        )
        return PiperFront(latent=latent, durations=durations.reshape(-1).astype(np.int64), ids=ids.reshape(-1))

    def decode(
        self, front: PiperFront, start: int = 0, end: int | None = None, control: RunControl | None = None
    ) -> FloatAudio:
        """Decode latent frames ``[start, end)`` in one call."""
        end = front.frames if end is None else end
        (audio,) = run_graph(
            self.decoder_session,
            None,
            {"latent": np.ascontiguousarray(front.latent[:, :, start:end])},
            f"Piper decoder on frames {start}..{end}",
            control,
        )
        return np.asarray(audio, dtype=np.float32).reshape(-1)

    def decode_windows(
        self,
        front: PiperFront,
        first_window_frames: int = 24,
        window_frames: int = 160,
        *,
        growth: float = 1.0,
        max_window_frames: int | None = None,
        next_window_frames: Callable[[], int] | None = None,
        control: RunControl | None = None,
    ) -> Iterator[EngineAudio]:
        """Yield the audio in contiguous pieces; the first window starts after the lead-in (BOS + pad).
        ``next_window_frames`` sizes each later window just before it is cut.

        The first piece carries ``phoneme_durations`` (samples per symbol) and ``lead_in``; the last ``tail``.
        """
        per_symbol, lead_in, tail = symbol_samples(front.ids, front.durations)
        lead_frames = lead_in // HOP
        ctx = self.context_frames
        windows = iter_windows(
            front.frames,
            lead_frames + first_window_frames,
            window_frames,
            ctx,
            ctx,
            growth=growth,
            max_size=max_window_frames,
            next_size=next_window_frames,
        )
        return decode_pieces(
            windows,
            front.frames,
            lambda _, window: self.decode(front, window.ctx_start, window.ctx_end, control),
            joiner=CrossfadeJoiner(HOP, self.crossfade),
            cost=self.cost,
            frame_s=HOP / self.sample_rate,
            sample_rate=self.sample_rate,
            phoneme_durations=per_symbol,
            lead_in=lead_in,
            tail=tail,
        )
