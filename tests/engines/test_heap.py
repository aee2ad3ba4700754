"""The heap trimmer hands free C-heap memory back to the system, on a timer and on demand."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from voxserve.engines.heap import HeapTrimmer

# In a fresh interpreter (the heap's state inside pytest depends on every test before): blocks below the
# mmap threshold, so they live in the heap, each followed by a small one that stays. Freeing the large
# ones leaves holes the heap cannot give back by shrinking its top; only a trim returns them.
SCENARIO = """
import ctypes, json
from voxserve.engines.heap import HeapTrimmer
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
blocks, pins = [], []
for _ in range(2000):
    blocks.append(libc.malloc(64 * 1024))
    pins.append(libc.malloc(64))
for block in blocks:
    ctypes.memset(block, 1, 64 * 1024)
touched = rss()
for block in blocks:
    libc.free(block)
freed = rss()
HeapTrimmer().trim()
print(json.dumps({"touched": touched, "freed": freed, "trimmed": rss()}))
"""


def test_freed_heap_memory_goes_back_to_the_system() -> None:
    if not HeapTrimmer().available:
        pytest.skip("this C library has no malloc_trim (not glibc)")
    out = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True, check=True).stdout
    rss = json.loads(out)
    assert rss["freed"] > rss["touched"] - 60, rss  # ~125 MiB freed, but still held by the heap
    assert rss["trimmed"] < rss["freed"] - 60, rss  # and returned by the trim


def test_the_timer_trims_until_stopped() -> None:
    trimmer = HeapTrimmer(every_s=0.05)
    if not trimmer.available:
        pytest.skip("this C library has no malloc_trim (not glibc)")
    trimmer.start()
    time.sleep(0.5)
    trimmer.stop()
    trims = trimmer.trims
    assert trims >= 3
    time.sleep(0.2)
    assert trimmer.trims == trims


# Six threads allocating at once, then glibc's own report of its heaps (one "Arena n:" block each).
ARENAS = """
import ctypes, sys, threading
from voxserve.engines.heap import cap_heaps
if sys.argv[1] == "capped":
    assert cap_heaps(2)
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
together = threading.Barrier(6)
def allocate():
    together.wait()
    for _ in range(1000):
        libc.malloc(1000)
threads = [threading.Thread(target=allocate) for _ in range(6)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc.malloc_stats()
"""


def _heaps(mode: str) -> int:
    stats = subprocess.run([sys.executable, "-c", ARENAS, mode], capture_output=True, text=True, check=True).stderr
    return sum(line.startswith("Arena ") for line in stats.splitlines())


def test_threads_share_as_many_heaps_as_they_are_capped_to() -> None:
    if not HeapTrimmer().available:
        pytest.skip("this C library is not glibc")
    assert _heaps("free") >= 5  # a heap per thread that allocates
    assert _heaps("capped") <= 2
