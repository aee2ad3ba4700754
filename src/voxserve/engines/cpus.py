"""How many cores this process may run on: what thread counts and the capacity are sized by.

``os.cpu_count()`` counts the machine's cores, not this process's: a server pinned with ``taskset``, or
in a container whose CPU limit is a cgroup quota (Kubernetes ``resources.limits.cpu``, ``docker run
--cpus``), sees every core of the host. Sized by that, its sessions start more threads than it may run
at once and its admission books cores it does not have, so listeners stall. This reads the affinity
mask and the cgroup's quota (v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us``) and takes the smaller.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from threadpoolctl import threadpool_limits

CGROUP = Path("/sys/fs/cgroup")


def usable_cores(cgroup: Path = CGROUP) -> int:
    """The cores this process may use: its affinity mask, capped by its cgroup's CPU quota (rounded up)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this platform
        cores = os.cpu_count() or 1
    quota = cgroup_quota(cgroup)
    return max(1, min(cores, math.ceil(quota)) if quota is not None else cores)


def cgroup_quota(cgroup: Path = CGROUP) -> float | None:
    """The CPU quota of this process's cgroup in cores, or None where there is none (or none to read)."""
    try:
        v2 = cgroup / "cpu.max"
        if v2.is_file():
            quota, period = v2.read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        v1 = cgroup / "cpu" / "cpu.cfs_quota_us"
        if v1.is_file():
            quota_us = int(v1.read_text())
            period_us = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
            return None if quota_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None
    return None


def one_thread_per_library_call() -> None:
    """Keep the numerical libraries' own thread pools (OpenBLAS, OpenMP) in this process to one thread.

    The worker pool shares the cores among the model calls and counts every thread it gives them
    (:mod:`voxserve.stream.sharing`). A BLAS call made on a worker (the decoder statistics' prediction
    for each window, the text front's tagger) would otherwise wake a thread per core of the library's
    own, which the pool does not count: a window planned on every core then shares them with it, and
    runs late (docs/benchmarks.md, "... OpenBLAS kept to one thread (stop 64)"). The calls are small
    (a window's statistics, a sentence's tags), so one thread is enough for them. It limits the
    libraries loaded when it is called: the runtime calls it before loading and again once loaded."""
    threadpool_limits(limits=1)
