"""The values a streaming session is built with and reports: its configuration and its statistics."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SessionConfig:
    """The knobs a session reads from Settings."""

    chunk_ms: int = 200
    first_segment_words: int = 6
    max_segment_chars: int = 400
    sentence_pause_ms: int = 500
    clause_pause_ms: int = 160
    lookahead_s: float = 3.0
    max_input_chars: int = 100_000
    first_window_s: float = 0.4
    max_window_s: float = 4.0  # largest window of a stream with a listener, or beside other streams
    max_unpaced_window_s: float = 4.0  # largest window of an unpaced stream alone in the pool
    idle_flush_ms: int = 150
    pace: bool = True  # keep only ``lookahead_s`` of audio ahead of (virtual) real-time playback


@dataclass(frozen=True)
class SessionStats:
    ttfa_s: float | None  # first text received → first chunk ready
    audio_s: float
    compute_s: float  # time the worker pool spent on this session
    chunks: int

    @property
    def rtf(self) -> float | None:
        return self.compute_s / self.audio_s if self.audio_s > 0 else None
