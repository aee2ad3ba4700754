"""Runtimes that make what real models can't on cue: a load that blocks until released (the 'loading'
phase), and sessions that fall behind their listener (underruns)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence

import numpy as np

from voxserve.server.runtime_api import SessionLike
from voxserve.types import AudioChunk, SchedulerStats, SynthesisParams, VoiceInfo


class BlockedLoadRuntime:
    def __init__(self, fail: bool = False) -> None:
        self.release = threading.Event()
        self.fail = fail
        self.tables: list[list[int]] = []

    def load(self) -> None:
        self.release.wait(30)
        if self.fail:
            raise RuntimeError("model file is corrupt")
        self.tables = [[n] for n in range(1000)]  # what a real load leaves: long-lived containers

    def voices(self) -> list[VoiceInfo]:
        return [VoiceInfo("fake", "fake", "en-us", "female", 16000)]

    def open_session(self, params: SynthesisParams, *, pace: bool = True) -> SessionLike:
        raise AssertionError("no synthesis expected")

    def scheduler_stats(self) -> SchedulerStats:
        return SchedulerStats(0, 0, 0)

    def stream_share(self, engine: str) -> float | None:
        return None

    def close(self) -> None:
        self.release.set()


class _Stats:
    def __init__(self) -> None:
        self.ttfa_s: float | None = None
        self.audio_s = 0.0
        self.compute_s = 0.0


# a wait in a script: seconds, or an event the test sets when the stream may go on
Wait = float | threading.Event


class ScriptedSession:
    """Emits silence on a schedule of ``(wait before, audio seconds)`` once its input is closed: a
    stream that falls behind its listener on cue, which a real model on a quiet machine does not."""

    sample_rate = 16_000

    def __init__(self, script: Sequence[tuple[Wait, float]], refusal: Exception | None = None) -> None:
        self.stats = _Stats()
        self._script = script
        self.refusal = refusal  # raised before any audio, as the worker pool refuses a first audio
        self._closed = asyncio.Event()

    def push_text(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._closed.set()

    def cancel(self) -> None:
        self._closed.set()

    async def __aiter__(self) -> AsyncIterator[AudioChunk]:
        await self._closed.wait()
        if self.refusal is not None:
            raise self.refusal
        offset = 0
        for n, (wait_s, audio_s) in enumerate(self._script):
            if isinstance(wait_s, threading.Event):
                await asyncio.to_thread(wait_s.wait, 30)
            else:
                await asyncio.sleep(wait_s)
            samples = np.zeros(round(audio_s * self.sample_rate), np.float32)
            yield AudioChunk(samples, self.sample_rate, offset, n, (), final=n == len(self._script) - 1)
            offset += len(samples)
            self.stats.audio_s += audio_s


class ScriptedRuntime(BlockedLoadRuntime):
    """Loads at once; every session follows ``script``, but those ``refuse`` names by their order of
    opening (from 0), which raise it before any audio."""

    def __init__(self, script: Sequence[tuple[Wait, float]], refuse: dict[int, Exception] | None = None) -> None:
        super().__init__()
        self.release.set()
        self.script = script
        self.refuse = refuse or {}
        self.opened = 0

    def open_session(self, params: SynthesisParams, *, pace: bool = True) -> SessionLike:
        self.opened += 1
        return ScriptedSession(self.script, self.refuse.get(self.opened - 1))
