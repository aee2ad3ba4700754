"""How long before its listener runs dry a playing stream's work is due: the playing margin, learned here.

A playing stream's job is due when its listener would run out of audio, and it must start its expected
work before that (:meth:`voxserve.stream.pool.WorkerPool.run`). Its audio reaches the listener's clock
later than that plan for two reasons, and the margin covers both:

* **A core held by a job that is never stopped.** A new stream's first audio is due on arrival, so
  once started it runs to the end (:meth:`~voxserve.stream.jobs.Hold.spare`). The first audios still
  queued are counted by the pool itself (:meth:`~voxserve.stream.sharing.CoreSharing._gives_way`); the
  one already on a core when the playing job is queued can keep it waiting for as long as that first
  job runs.
* **A job's audio arriving later than its learned cost says.** Costs are learned from windows decoded
  alone or at a calmer moment: two streams decoding side by side share memory bandwidth and caches,
  and whatever else runs on the machine takes time from every job. And the result must still reach
  the stream's event loop, which is busy with every other stream's audio and connections.

Both depend on the machine, the engine and the load, so both are measured on the jobs themselves, by
the sessions that run them (:meth:`voxserve.stream.session.SynthesisSession._timed`): the work of each
first-audio job, and for each playing job how far its work plus the wait for its result to reach the
session exceeded its expected cost. The margin is the sum of a high quantile (:data:`QUANTILE`) of
each, over the last :data:`KEPT` samples of each. Until a first job has been measured, the largest
expected cost of one submitted so far stands in for it.
"""

from __future__ import annotations

import threading
from collections import deque

KEPT = 64  # samples each quantile is read from: the last few dozen jobs, so it follows the load
QUANTILE = 0.9  # a playing stream is covered against all but the slowest tenth of each delay


def _quantile(samples: deque[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(QUANTILE * len(ordered)))] if ordered else 0.0


class MarginMeter:
    """The playing margin, learned from the jobs the pool runs (see the module docstring). Thread-safe;
    :attr:`margin_s` is a float any thread may read."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first: deque[float] = deque(maxlen=KEPT)
        self._late: deque[float] = deque(maxlen=KEPT)
        self._expected = 0.0
        self.margin_s = 0.0

    def expect(self, cost_s: float) -> None:
        """A first-audio job expected to cost ``cost_s`` was submitted: it stands in until one is measured."""
        with self._lock:
            self._expected = max(self._expected, cost_s)
            if not self._first:
                self._update()

    def ran(self, work_s: float, cost_s: float, *, first: bool, landed_s: float = 0.0) -> None:
        """A job expected to cost ``cost_s`` worked ``work_s``, and its result reached its stream
        ``landed_s`` after it was done. A first audio's work is a sample of how long it keeps a core
        from a playing stream; a playing job's lateness against its plan (never below 0) one of how much
        later than planned its audio arrives. A playing job with no expected cost teaches nothing."""
        with self._lock:
            if first:
                self._first.append(max(0.0, work_s))
            elif cost_s > 0:
                self._late.append(max(0.0, work_s + landed_s - cost_s))
            else:
                return
            self._update()

    def clear(self) -> None:
        """Forget every sample (the server's warm-up, whose cold jobs are no stream's)."""
        with self._lock:
            self._first.clear()
            self._late.clear()
            self._expected = self.margin_s = 0.0

    def _update(self) -> None:
        blocked = _quantile(self._first) if self._first else self._expected
        self.margin_s = blocked + _quantile(self._late)

    @property
    def samples(self) -> tuple[int, int]:
        """(first-audio jobs, playing jobs) measured and kept."""
        with self._lock:
            return len(self._first), len(self._late)
