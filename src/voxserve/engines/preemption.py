"""Model calls that a scheduler may interrupt, so that a more urgent job gets the cores at once.

On a small CPU box a stream that plays alone decodes each window on every core. A caller who arrives
meanwhile would wait for that window to finish before its own first window could start. The worker
pool (:class:`voxserve.stream.pool.WorkerPool`) therefore hands each job it runs a
:class:`Preemption`, which :func:`run_preemptible` consults around every ONNX Runtime call made on that
thread: the pool may stop the call in flight (``RunOptions.terminate``); the call then gives its cores
back, waits until the pool readmits it, and runs again from the same inputs. The audio is the same;
only the work done before the stop is lost. Engines need not know: they make their calls through
:func:`voxserve.engines.windowing.run_graph`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

import onnxruntime as ort

from voxserve.engines.onnx import thread_scoped

T = TypeVar("T")


class Preemption(Protocol):
    """A scheduler's hold on the model calls of the job running on this thread."""

    def arm(self, options: ort.RunOptions) -> bool:
        """A call with ``options`` is about to start; False: the scheduler wants the cores first (call
        :meth:`resume`). Until :meth:`disarm` the scheduler may set ``options.terminate``."""

    def disarm(self) -> bool:
        """The call has ended; True if the scheduler asked it to stop meanwhile."""

    def resume(self) -> None:
        """Give this job's cores back and wait until the scheduler readmits it (with a new thread budget)."""


_LOCAL = threading.local()


def preemptible(hold: Preemption | None) -> contextlib.AbstractContextManager[None]:
    """Model calls made by this thread inside the block may be interrupted through ``hold``."""
    return thread_scoped(_LOCAL, "hold", hold)


def current_hold() -> Preemption | None:
    return getattr(_LOCAL, "hold", None)


def _lost() -> float:
    return float(getattr(_LOCAL, "lost", 0.0))


@contextlib.contextmanager
def work_timer() -> Iterator[Callable[[], float]]:
    """Seconds of model work inside the block: wall time less what preemption cost (the work it
    stopped and the wait for cores), so that learned window costs are not skewed by it."""
    started, lost = time.perf_counter(), _lost()
    yield lambda: time.perf_counter() - started - (_lost() - lost)


def run_preemptible(call: Callable[[Any], T], options: ort.RunOptions | None, stopped: Callable[[], bool]) -> T:
    """``call(options)`` under this thread's :class:`Preemption`, made again after each interruption.

    ``stopped()`` says whether the caller itself stopped the call (a cancelled stream): then the error
    is raised as it is, and ``options.terminate`` is left set. Without a hold this is ``call(options)``.
    """
    hold = current_hold()
    if hold is None:
        return call(options)
    own = options if options is not None else ort.RunOptions()
    while True:
        if stopped():  # the caller stopped it while it waited for cores
            raise RuntimeError("the model call was stopped by its caller")
        started = time.perf_counter()
        if hold.arm(own):  # else the scheduler wants the cores before the call starts
            try:
                result = call(own)
            except Exception:
                if not hold.disarm() or stopped():
                    raise
                own.terminate = False  # stopped by the scheduler: made again once readmitted
            else:
                if hold.disarm() and not stopped():  # asked to stop just as it finished: the result stands
                    own.terminate = False
                return result
        hold.resume()
        _LOCAL.lost = _lost() + time.perf_counter() - started
