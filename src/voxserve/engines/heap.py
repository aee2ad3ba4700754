"""Hand the C heap's free memory back to the system while the engines run.

ONNX Runtime's CPU sessions run without a memory arena (:class:`voxserve.engines.onnx.SessionFactory`):
an arena would keep the peak of the largest call it ever ran for the life of the process. Their tensors
then come from the C allocator, which keeps freed memory in per-thread heaps for reuse, and a server
with a dozen worker and ONNX Runtime threads collects much of it. :class:`HeapTrimmer` asks glibc
(``malloc_trim``) every few seconds to return what is free, so the resident size follows the load
instead of its peak. It does nothing where the C library has no ``malloc_trim`` (musl, macOS).

glibc also gives threads that allocate at the same moment heaps of their own (arenas), up to eight per
core, and memory freed in one heap is not reused by another. :func:`cap_heaps` limits them to one per
core (no more threads than cores allocate at once) before the engines start their threads.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable

TRIM_EVERY_S = 5.0  # seldom enough that allocations after a trim (page faults) cost little


@functools.cache
def _malloc_trim() -> Callable[[], None] | None:
    """glibc's ``malloc_trim(0)`` from the symbols already loaded in this process (no library search,
    which would start a subprocess), once per process; None where the C library has none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: trim(0)


M_ARENA_MAX = -8  # glibc's mallopt() parameter: the most heaps (arenas) threads may get


@functools.cache
def _mallopt() -> Callable[[int, int], int] | None:
    """glibc's ``mallopt`` from the symbols already loaded, once per process; None where there is none."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return lambda param, value: int(mallopt(param, value))


def cap_heaps(count: int) -> bool:
    """Let threads share at most ``count`` C heaps; False where glibc is not there to ask.

    Process-wide, and only for heaps made from now on: glibc fixes its own limit once a ninth heap is
    made, so call it before the threads that will allocate are started."""
    mallopt = _mallopt()
    return mallopt is not None and mallopt(M_ARENA_MAX, max(1, count)) == 1


class HeapTrimmer:
    """A daemon thread returning free heap memory to the system every ``every_s`` seconds until stopped."""

    def __init__(self, every_s: float = TRIM_EVERY_S) -> None:
        self.every_s = every_s
        self.trims = 0
        self._trim = _malloc_trim()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self._trim is not None

    def start(self) -> None:
        if self._trim is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="voxserve-heap-trim", daemon=True)
        self._thread.start()

    def trim(self) -> None:
        """Return free memory now."""
        if self._trim is not None:
            self._trim()
            self.trims += 1

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.trim()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None
