"""Cross-stream batching: decoder windows of concurrent streams decoded in one model call.

On a GPU one decoder call on a short window leaves most of the device idle, and the per-call overhead
dominates; stacking the windows of many streams into one call is how one device serves hundreds of
streams. :class:`BatchRunner` sits between the engines and an ONNX session. Engines call
:meth:`BatchRunner.run` from their worker threads exactly as they would call the session; a single
dispatcher thread takes the oldest waiting call, gathers others with the same shapes (same window
size) that arrive within ``max_wait_s``, stacks them along the batch axis, runs them with I/O binding
and hands each caller its own row. With ``max_batch`` 1 nothing is batched and calls go straight to the
session, with the caller's :class:`~voxserve.engines.onnx.RunControl`.

A batched call can't be aborted for one stream: a cancelled caller still waiting is dropped (and gets
:class:`~voxserve.errors.Cancelled`); one already in a running batch waits for that batch. On CPU
a stacked call has not made more audio per core-second than the same windows decoded one by one or
side by side (``bench/batching.py`` measures it on the machine at hand; docs/benchmarks.md), so it is
off there by default.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from voxserve.engines.onnx import OnnxSession, RunControl
from voxserve.engines.windowing import run_graph
from voxserve.errors import Cancelled, EngineFailure

Array = npt.NDArray[Any]


@dataclass(frozen=True)
class BatchPolicy:
    """How many windows one call may hold and how long the oldest may wait for company."""

    max_batch: int = 1
    max_wait_s: float = 0.002

    @property
    def enabled(self) -> bool:
        return self.max_batch > 1


@dataclass
class _Call:
    feeds: Mapping[str, Array]
    key: tuple[Any, ...]
    control: RunControl | None
    arrived: float = field(default_factory=time.monotonic)
    future: Future[list[Array]] = field(default_factory=Future)


def stack_feeds(feeds: Sequence[Mapping[str, Array]]) -> dict[str, Array]:
    """Concatenate single-window feeds along axis 0.

    An input whose shape differs between calls only where one of them has size 1 (statistics that are
    unused, given as ``[1, 1, 1]`` zeros) is broadcast to the larger shape first.
    """
    out: dict[str, Array] = {}
    for name in feeds[0]:
        arrays = [np.asarray(f[name]) for f in feeds]
        target = tuple(int(d) for d in np.max([a.shape for a in arrays], axis=0))
        rows = [a if a.shape == target else np.broadcast_to(a, target) for a in arrays]
        out[name] = np.concatenate(rows, axis=0)
    return out


class BatchRunner:
    """Runs ``session`` for many threads, merging concurrent calls whose ``key_inputs`` shapes match."""

    def __init__(self, session: OnnxSession, policy: BatchPolicy, key_inputs: Sequence[str]) -> None:
        self.session = session
        self.policy = policy
        self.key_inputs = tuple(key_inputs)
        self.batches = 0  # calls made to the session, and the windows they held (for benches and tests)
        self.windows = 0
        self._queue: list[_Call] = []
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def run(
        self, outputs: list[str], feeds: Mapping[str, Array], what: str, control: RunControl | None = None
    ) -> list[Array]:
        """Like ``session.run(outputs, feeds)`` for one window (batch dimension 1)."""
        if not self.policy.enabled:
            result = run_graph(self.session, outputs, dict(feeds), what, control)
            with self._cond:
                self.batches += 1
                self.windows += 1
            return result
        if control is not None and control.cancelled:
            raise Cancelled(f"{what}: the stream was cancelled")
        key = tuple((name, np.shape(feeds[name])) for name in self.key_inputs)
        call = _Call(feeds, (tuple(outputs), key), control)
        with self._cond:
            if self._closed:
                raise EngineFailure(f"{what}: the decoder is shut down")
            if self._thread is None:
                self._thread = threading.Thread(target=self._dispatch, name="voxserve-batcher", daemon=True)
                self._thread.start()
            self._queue.append(call)
            self._cond.notify_all()
        try:
            return call.future.result()
        except EngineFailure as exc:
            raise EngineFailure(f"{what} failed in a batch: {exc}") from exc

    def close(self) -> None:
        with self._cond:
            self._closed = True
            pending, self._queue = self._queue, []
            self._cond.notify_all()
        for call in pending:
            call.future.set_exception(EngineFailure("the decoder is shut down"))

    def _take_batch(self) -> list[_Call] | None:
        """Wait for the oldest call and the company it can get in time; None once closed."""
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            head = self._queue[0]
            deadline = head.arrived + self.policy.max_wait_s
            while True:
                same = [c for c in self._queue if c.key == head.key][: self.policy.max_batch]
                left = deadline - time.monotonic()
                if len(same) >= self.policy.max_batch or left <= 0 or self._closed:
                    break
                self._cond.wait(left)
            taken = {id(c) for c in same}
            self._queue = [c for c in self._queue if id(c) not in taken]
            return same

    def _dispatch(self) -> None:
        while (batch := self._take_batch()) is not None:
            live = []
            for call in batch:
                if call.control is not None and call.control.cancelled:
                    call.future.set_exception(Cancelled("the stream was cancelled"))
                else:
                    live.append(call)
            if live:
                self._run_batch(live)

    def _run_batch(self, calls: list[_Call]) -> None:
        outputs = list(calls[0].key[0])
        try:
            feeds = stack_feeds([c.feeds for c in calls])
            binding = self.session.io_binding()
            for name, value in feeds.items():
                binding.bind_cpu_input(name, np.ascontiguousarray(value))
            for name in outputs:
                binding.bind_output(name)
            self.session.run_with_iobinding(binding)
            results = binding.copy_outputs_to_cpu()
        except Exception as exc:  # ONNX Runtime errors have no common base class; every caller hears of it
            failure = EngineFailure(f"batched decoder call ({len(calls)} windows): {exc}")
            for call in calls:
                call.future.set_exception(failure)
            return
        with self._cond:
            self.batches += 1
            self.windows += len(calls)
        for i, call in enumerate(calls):
            call.future.set_result([np.asarray(r[i : i + 1]) for r in results])
