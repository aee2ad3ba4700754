"""What the server needs from the core runtime (``voxserve.runtime.Runtime`` satisfies it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from voxserve.types import AudioChunk, SchedulerStats, SynthesisParams, VoiceInfo


class StatsLike(Protocol):
    @property
    def ttfa_s(self) -> float | None: ...

    @property
    def audio_s(self) -> float: ...

    @property
    def compute_s(self) -> float: ...


class SessionLike(Protocol):
    @property
    def sample_rate(self) -> int: ...

    @property
    def stats(self) -> StatsLike: ...

    def push_text(self, text: str) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def cancel(self) -> None: ...

    def __aiter__(self) -> AsyncIterator[AudioChunk]: ...


class RuntimeLike(Protocol):
    def load(self) -> None:
        """Load models and warm them up (blocking; the server runs it in a thread)."""

    def voices(self) -> list[VoiceInfo]: ...

    def open_session(self, params: SynthesisParams, *, pace: bool = True) -> SessionLike:
        """``pace``: keep only ``lookahead_s`` of audio ahead of real-time playback (a live listener);
        without it, make audio as fast as the consumer takes it (the whole text is known)."""
        ...

    def scheduler_stats(self) -> SchedulerStats: ...

    def stream_share(self, engine: str) -> float | None:
        """The fraction of the machine one real-time stream of ``engine`` takes (None: not known)."""
        ...

    def close(self) -> None: ...
