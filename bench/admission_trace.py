"""How admission learns under load: its limit, booked load, active streams, a stream's share and the core
factor, every ``--every`` seconds while ``voxserve bench`` loads the server, the longest pause
Python's garbage collector made in that time (no stream's audio moves while it runs), and the model
calls stopped so far for a late job (with the core-seconds they had held: work made again). At the end, the
sizes of the decoder windows the voice's engine decoded: a window decodes its context on both sides as
well as its audio, so a load that keeps windows small spends much of its work on context.

At the start it prints a stream's window share and what a stream is booked at before the core meter's
first sample (its first job's cost, ``capacity.ramp_factor``).

The server runs in this process (the app and uvicorn in a thread, default settings but the rate limit)
so that the admission controller and the runtime can be read directly; the load comes from a
``voxserve bench`` subprocess, whose table is printed at the end. The server's own count of stalled
streams is read from its metrics registry at each line, so each stall shows when it was counted.

    .venv/bin/python -m bench.admission_trace --voice en_US-joe-medium --concurrency 24 --duration 60
    .venv/bin/python -m bench.admission_trace --concurrency 24 --duration 30 --transport grpc --incremental 25

The second feeds each caller's text over a duplex gRPC stream a word every 40 ms, as an LLM would.
"""

from __future__ import annotations

import argparse
import gc
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import cast

from bench.in_process import start_server
from voxserve.engines.windowing import WindowCost
from voxserve.runtime import Runtime
from voxserve.stream.jobs import Hold
from voxserve.stream.pool import WorkerPool
from voxserve.stream.window_budget import MARGIN


class _GcPauses:
    """A ``gc.callbacks`` hook: the longest collection since it was last read."""

    def __init__(self) -> None:
        self._began = 0.0
        self._longest = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self._longest = max(self._longest, time.perf_counter() - self._began)

    def take(self) -> float:
        longest, self._longest = self._longest, 0.0
        return longest


class _WindowSizes:
    """Wraps a :class:`WindowCost`'s ``record`` on the instance: every window decoded, with its size
    (audio seconds decoded, context included) and its work (seconds)."""

    BUCKETS = (0.5, 0.8, 1.2, 1.8, 2.5, float("inf"))

    def __init__(self, cost: WindowCost) -> None:
        self._lock = threading.Lock()
        self._windows: list[tuple[float, float]] = []
        recorded: Callable[..., None] = cost.record

        def record(decoded_s: float, seconds: float, threads: int | None = None) -> None:
            with self._lock:
                self._windows.append((decoded_s, seconds))
            recorded(decoded_s, seconds, threads)

        cost.record = record  # type: ignore[method-assign]

    def table(self) -> str:
        with self._lock:
            windows = list(self._windows)
        rows = [f"decoder windows: {len(windows)}, decoded size (context included) against work"]
        low = 0.0
        for high in self.BUCKETS:
            chosen = [(d, s) for d, s in windows if low <= d < high]
            decoded, work = sum(d for d, _ in chosen), sum(s for _, s in chosen)
            rows.append(
                f"  {low:3.1f}-{high:3.1f} s: {len(chosen):5d} windows  {decoded:7.1f} s decoded  {work:6.1f} s work"
            )
            low = high
        return "\n".join(rows)


class _Preemptions:
    """Wraps a :class:`WorkerPool`'s ``_resume`` on the instance: how many model calls were stopped for a
    late job, and the core-seconds their holds had run when stopped (the work thrown away, at most: a
    stopped call is made again from its inputs, and a hold may also span work done before that call)."""

    def __init__(self, pool: WorkerPool) -> None:
        self._lock = threading.Lock()
        self.count, self.core_s = 0, 0.0
        resume: Callable[[Hold], None] = pool._resume

        def counted(hold: Hold) -> None:
            with self._lock:
                self.count += 1
                self.core_s += (time.monotonic() - hold.started) * (hold.threads or 1)
            resume(hold)

        pool._resume = counted  # type: ignore[method-assign]


class _JobTimes:
    """Wraps a :class:`WorkerPool`'s ``_release`` on the instance: for the jobs that came with an expected
    cost, the seconds they held their worker against that cost (less the planner's margin): how far the
    window fit the planner sizes windows with is from what a job really takes."""

    def __init__(self, pool: WorkerPool) -> None:
        self._lock = threading.Lock()
        self.held_s, self.expected_s = 0.0, 0.0
        release: Callable[[Hold], None] = pool._release

        def timed(hold: Hold) -> None:
            if hold.job.cost > 0:
                with self._lock:
                    self.held_s += time.monotonic() - hold.started
                    self.expected_s += hold.job.cost / MARGIN
            release(hold)

        pool._release = timed  # type: ignore[method-assign]

    def ratio(self) -> float:
        with self._lock:
            return self.held_s / self.expected_s if self.expected_s else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="en_US-joe-medium")
    parser.add_argument("--concurrency", default="24")
    parser.add_argument("--duration", default="60")
    parser.add_argument("--text-set", default="short", help="the texts the callers speak (voxserve bench's sets)")
    parser.add_argument("--transport", default="http", help="http, ws or grpc (voxserve bench's)")
    parser.add_argument("--incremental", type=float, default=0.0, help="ws/grpc: words a second, as an LLM sends")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between lines")
    parser.add_argument("--port", type=int, default=18100)
    parser.add_argument("--output", default="bench-results/admission-trace")
    args = parser.parse_args()

    served = start_server(args.port)
    state, settings = served.state, served.settings
    runtime = cast(Runtime, state.runtime)  # the real one: create_app builds it from the settings
    found = runtime.engine_for(args.voice)
    engine = found.name
    sizes = _WindowSizes(found.window_cost) if found.window_cost is not None else None
    windows, cold = runtime.window_share(engine), runtime.stream_share(engine)
    if windows and cold:  # before the meter's first sample a stream is booked at its first job's cost
        print(f"window share {windows:.4f}, booked before any stream is measured {cold:.4f}", flush=True)
    stopped = _Preemptions(runtime.pool)
    jobs = _JobTimes(runtime.pool)
    command = [sys.executable, "-m", "voxserve", "bench", "--url", f"http://127.0.0.1:{args.port}"]
    command += ["--grpc-target", f"127.0.0.1:{settings.grpc_port}"]
    command += ["--voice", args.voice, "--concurrency", args.concurrency, "--duration", args.duration]
    command += ["--text-set", args.text_set, "--transport", args.transport]
    if args.incremental:
        command += ["--incremental", str(args.incremental)]
    load = subprocess.Popen([*command, "--output", args.output], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    admission, started = state.admission, time.monotonic()
    pauses = _GcPauses()
    gc.callbacks.append(pauses)
    try:
        while load.poll() is None:
            time.sleep(args.every)
            stalled = sum(
                sample.value
                for metric in state.metrics.registry.collect()
                if metric.name == "voxserve_stalled_streams"
                for sample in metric.samples
                if sample.name.endswith("_total")
            )
            share = runtime.stream_share(engine)
            print(
                f"{time.monotonic() - started:6.1f} s  active {admission.active:3d}  limit {admission.limit:.3f}  "
                f"load {admission.load:.2f}  share {share or 0:.4f}  core factor {runtime.core_factor:.2f}  "
                f"stalled streams {stalled:.0f}  gc pause {pauses.take() * 1000:4.0f} ms  "
                f"stopped calls {stopped.count:4d} ({stopped.core_s:5.1f} core-s held)  "
                f"jobs held/expected {jobs.ratio():.2f}",
                flush=True,
            )
        out = load.stdout.read().decode() if load.stdout is not None else ""
        print(out[out.find(f"{args.voice}\n") :] if f"{args.voice}\n" in out else out[-2000:])
        if sizes is not None:
            print(sizes.table())
    finally:
        gc.callbacks.remove(pauses)
        load.kill()
        served.stop()


if __name__ == "__main__":
    main()
