"""Engine and scheduler tuning: how the runtime decodes and shares the cores.

These are engineering choices, not deployment settings, so they live in code rather than in the
environment: :class:`voxserve.settings.Settings` holds what an operator sets (network, auth, limits,
models, voices, streaming behaviour), and a :class:`Tuning` is passed to
:class:`voxserve.runtime.Runtime` by whoever needs other values (bench scripts comparing variants,
tests). Defaults are what the server runs with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DecodeMode = Literal["windowed", "sentence"]


@dataclass(frozen=True)
class Tuning:
    """Decoder windows, thread sharing, batching and preemption (see docs/architecture.md)."""

    # windowed: split graphs decoded in growing windows (streaming, word timings); sentence: one call each
    decode_mode: DecodeMode = "windowed"
    window_first_ms: int = 400  # speech in the first decoder window of a stream
    window_next_ms: int = 500  # first window of later segments, second of the first
    window_growth: float = 1.4  # each later window this much larger (unpaced schedule)
    window_max_ms: int = 4000  # largest decoder window
    # largest window of a stream played in real time: a new caller's first audio may wait for one of them
    window_paced_max_ms: int = 2000
    window_context_ms: int = 200  # audio decoded on each side of a window and cropped, for seamless joins
    window_early_stats: bool = True  # the sentence's decoder statistics before a stream's first window
    window_first_context_ms: int = 100  # right context of a stream's first window (less work before audio)
    max_pad_ms: int = 100  # cap on the model's pad-token silence kept for decoding
    worker_threads: int = 0  # synthesis workers (0: cores / intra-op threads; two per core when elastic)
    elastic_threads: bool = True  # CPU: concurrent streams share the cores (graphs loaded per thread count)
    decode_batch_wait_ms: float = 2.0  # how long a decoder window waits for others to batch with
    # booked core-seconds of delivered audio per sample of what streams really cost (capacity.CoreMeter)
    capacity_sample_core_s: float = 2.0
    onnx_spinning: bool = False  # idle ONNX Runtime threads busy-wait (only pays with one session per core)

    def __post_init__(self) -> None:
        if self.decode_mode not in ("windowed", "sentence"):
            raise ValueError(f"decode_mode must be 'windowed' or 'sentence', not {self.decode_mode!r}")
        sizes = (self.window_first_ms, self.window_next_ms, self.window_max_ms, self.window_paced_max_ms)
        if min(sizes) <= 0 or self.window_growth < 1.0:
            raise ValueError("decoder windows must be positive and grow by a factor of at least 1")
        if self.window_context_ms < 0 or self.window_first_context_ms < 0 or self.max_pad_ms <= 0:
            raise ValueError("window contexts must not be negative and the pad cap must be positive")
        if self.capacity_sample_core_s <= 0:
            raise ValueError("capacity_sample_core_s must be positive")
        if self.worker_threads < 0 or self.decode_batch_wait_ms < 0:
            raise ValueError("worker_threads and decode_batch_wait_ms must not be negative")
