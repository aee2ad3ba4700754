"""A runtime whose model loading blocks until released: the only way to observe the 'loading' phase."""

from __future__ import annotations

import threading

from voxserve.server.runtime_api import SessionLike
from voxserve.types import SchedulerStats, SynthesisParams, VoiceInfo


class BlockedLoadRuntime:
    def __init__(self, fail: bool = False) -> None:
        self.release = threading.Event()
        self.fail = fail

    def load(self) -> None:
        self.release.wait(30)
        if self.fail:
            raise RuntimeError("model file is corrupt")

    def voices(self) -> list[VoiceInfo]:
        return [VoiceInfo("fake", "fake", "en-us", "female", 16000)]

    def open_session(self, params: SynthesisParams, *, pace: bool = True) -> SessionLike:
        raise AssertionError("no synthesis expected")

    def scheduler_stats(self) -> SchedulerStats:
        return SchedulerStats(0, 0, 0)

    def close(self) -> None:
        self.release.set()
