"""bench/batching.py times the same windows decoded three ways: each way must decode every window of the
batch, stacked or not, at the thread count being measured, or its times compare unlike work."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from bench import batching
from voxserve.engines.onnx import current_thread_budget


class _Session:
    """Counts the windows each call holds (rows of ``content``) and the thread budget it ran under."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int | None]] = []
        self._lock = threading.Lock()

    def run(self, outputs: list[str], feeds: dict[str, Any]) -> list[Any]:
        with self._lock:
            self.calls.append((feeds["content"].shape[0], current_thread_budget()))
        return [np.zeros((feeds["content"].shape[0], 10), dtype=np.float32)]


def _windows(n: int) -> list[dict[str, Any]]:
    return [{"content": np.full((1, 4, 6), i, dtype=np.float32), "style": np.zeros((1, 8))} for i in range(n)]


def test_each_way_decodes_the_whole_batch_at_the_threads_measured() -> None:
    session = _Session()
    times = batching.compare(session, ["audio"], _windows(3), batch=2, threads=1, cores=2, repeats=3)
    assert set(times) == {"one call", "in turn", "side by side"}
    rounds = 3 + 1  # the repeats and one warm-up each
    stacked = [n for n, _ in session.calls if n == 2]
    single = [n for n, _ in session.calls if n == 1]
    assert len(stacked) == rounds  # one call of both windows a round
    assert len(single) == 2 * 2 * rounds  # two calls a round in turn, two side by side
    assert {threads for _, threads in session.calls} == {1}


def test_side_by_side_only_where_the_calls_fit_the_cores() -> None:
    session = _Session()
    times = batching.compare(session, ["audio"], _windows(2), batch=2, threads=2, cores=2, repeats=1)
    assert set(times) == {"one call", "in turn"}
    assert {threads for _, threads in session.calls} == {2}
