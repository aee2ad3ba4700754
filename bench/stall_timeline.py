"""Every job and every piece of audio of the streams that stalled while ``voxserve bench`` loaded the server.

The server runs in this process (default settings but the rate limit), as in ``bench/admission_trace.py``;
``voxserve bench`` loads it from a subprocess. Each session's pool jobs are wrapped: for each, when it was
submitted (seconds since the load began), its expected cost, its deadline against that moment, when it
started and ended, the threads it ran with, and the pool at submission (jobs queued, running, cores free,
streams producing audio). Each piece of audio the listener received is listed with its length and, where
the listener had run dry, how long it waited. At the end, the timelines of the first ``--show`` streams
that stalled: where in the stream each ran dry and what the cores were doing meanwhile, with every other
stream's jobs that ran in the ``--before`` seconds before it ran dry.

    .venv/bin/python -m bench.stall_timeline --concurrency 8,12,16 --ramp 0

``--slow-jobs N`` prints the N jobs that ran longest against the cost they were planned with (a job the
pool runs on fewer threads than planned takes longer by design: ``CoreSharing._enough``), each with its
stream's events meanwhile (a job stopped for another stream's late job says when it was readmitted)
and the other streams' jobs. ``--slow-firsts N`` prints, as for stalls, the N slowest first audios: the
stream's jobs until its first audio, and every other stream's jobs from ``--before`` seconds before
its first job.

Before them, where each stream's first audio went, from the session's first job to the first audio: the
time its jobs waited for a core, worked, and spent between jobs (planning, delivery, the event loop), as
median, P90 and the slowest tenth's mean; how many first audios the pool held back for thin streams
(``CoreSharing._waits``); how many model calls it stopped for a late job, and how many of the jobs
stopped ended past their deadline; and for each time a listener ran dry, the job it waited for
(:meth:`_Timelines.causes`). ``--text-set long`` gives the issue's three-sentence replies:

    .venv/bin/python -m bench.stall_timeline --voice af_heart --concurrency 3 --duration 60 --text-set long --show 0

``--beside VOICE:LEVEL`` runs a second load of ``LEVEL`` listeners of another voice at the same time
(as ``bench.compare_trees --beside``); each stream is named by its engine's sample rate. A Kokoro
listener beside eight Piper ones, only the Kokoro streams' stalls shown:

    .venv/bin/python -m bench.stall_timeline --voice af_heart --concurrency 1 --duration 40 \
        --beside en_US-joe-medium:8 --rate 24000
"""

from __future__ import annotations

import argparse
import collections
import itertools
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.in_process import start_server
from voxserve.benchmark.stats import percentile
from voxserve.engines.onnx import current_thread_budget
from voxserve.stream import session as session_module
from voxserve.stream.jobs import Hold, Job
from voxserve.stream.playback import PlaybackClock
from voxserve.stream.pool import WorkerPool
from voxserve.stream.sharing import CoreSharing

Event = tuple[float, str]
_KEYS = itertools.count()


def _key(clock: PlaybackClock) -> int:
    """A stream's key: its playback clock's, given once (an ``id`` is reused once a clock is freed)."""
    if not hasattr(clock, "_trace_key"):
        clock._trace_key = next(_KEYS)  # type: ignore[attr-defined]
    return clock._trace_key  # type: ignore[attr-defined]


class _Timelines:
    """Events per stream (keyed by its playback clock), with times from :meth:`start`."""

    def __init__(self) -> None:
        self.events: dict[int, list[Event]] = collections.defaultdict(list)
        self.rates: dict[int, int] = {}  # each stream's sample rate: which engine it is
        self.jobs: list[tuple[float, float, int, str]] = []  # every job: start, end, stream, what
        self.held: dict[tuple[int | None, int | None], list[float]] = collections.defaultdict(list)
        self.runs: dict[int, list[tuple[float, float, float]]] = collections.defaultdict(list)  # submitted, start, end
        self.first_audio: dict[int, float] = {}  # when each stream's first audio reached its listener
        self.held_first: set[int] = set()  # streams whose first audio was held back for thin ones
        self.slow: list[tuple[float, int, float, float]] = []  # every job: wall / cost, stream, start, end
        self.stops: dict[int, list[float]] = collections.defaultdict(list)  # when each stream's jobs were stopped
        self.stopped: list[tuple[bool, bool]] = []  # each stopped job: ended past its deadline, past running dry
        # each stream's jobs: submitted, started, ended, expected cost, deadline, threads; and where it ran dry
        self.done: dict[int, list[tuple[float, float, float, float, float, int | None]]] = collections.defaultdict(list)
        self.dry: list[tuple[int, float, float, float]] = []  # stream, when, audio position, wait
        self.pooled: dict[int, int] = {}  # the id of a session's stream in the pool, to its key (set per job)
        self.t0 = time.monotonic()

    def start(self) -> None:
        self.events.clear()
        self.jobs.clear()
        self.runs.clear()
        self.first_audio.clear()
        self.held_first.clear()
        self.slow.clear()
        self.stops.clear()
        self.stopped.clear()
        self.done.clear()
        self.dry.clear()
        self.t0 = time.monotonic()

    def add(self, key: int, at: float, line: str) -> None:
        self.events[key].append((at - self.t0, line))

    def stalled(self, rate: int | None = None) -> list[tuple[int, list[Event]]]:
        """The streams that ran dry (of sample rate ``rate`` only, if given), with their events."""
        return [
            (key, sorted(ev))
            for key, ev in self.events.items()
            if any("ran dry" in line for _, line in ev) and rate in (None, self.rates.get(key))
        ]

    def causes(self) -> str:
        """For each time a listener ran dry, the job whose audio it waited for (the first of its stream
        to end after that moment): its place in the stream, how long before its deadline it was
        submitted, how long it waited for a core, and how long it ran against its expected cost
        (margin included) at the threads it ran with."""
        rows = ["listeners run dry: position | the job it waited for: place, submitted before its deadline,"]
        rows.append("  waited for a core, ran / expected cost (margin included), threads")
        for key, at, position, wait in sorted(self.dry, key=lambda d: d[1]):
            jobs = self.done.get(key, [])
            after = [(i, job) for i, job in enumerate(jobs) if job[2] >= at - wait - 1e-3]
            if not after:
                continue
            i, (submitted, start, end, cost, deadline, threads) = after[0]
            ahead = "never" if deadline == float("inf") else f"{deadline - submitted:+.2f} s"
            ran = f"{end - start:.2f} / {cost:.2f} s"
            job = f"job {i}, {ahead}, {start - submitted:.2f} s, {ran}, {threads}"
            rows.append(f"  {position:6.2f} s, {wait * 1000:4.0f} ms | {job}")
        return "\n".join(rows)

    def held_table(self) -> str:
        """Each job's wall time over its expected cost, by sample rate and threads: how far the costs
        the windows are planned with are from what the jobs take under this load."""
        rows = ["jobs' wall time / expected cost (expected cost > 0.05 s), by engine and threads: median, P90, jobs"]
        for (rate, threads), ratios in sorted(self.held.items(), key=lambda kv: (kv[0][0] or 0, kv[0][1] or 0)):
            p90 = percentile(ratios, 90)
            rows.append(f"  {rate} Hz, {threads} threads: {statistics.median(ratios):.2f}, {p90:.2f}, {len(ratios)}")
        return "\n".join(rows)

    def first_audio_table(self) -> str:
        """Where each stream's first audio went, from its first job's submission (the session's start) to
        its first audio: waiting for a core, working, and between jobs (planning, delivery, the event
        loop). Median and P90 of each over the streams, and their means over the slowest tenth."""
        parts = []  # total, waited, worked, between, held back
        for key, heard in self.first_audio.items():
            runs = [run for run in self.runs.get(key, []) if run[0] < heard]
            if not runs:
                continue
            total = heard - min(run[0] for run in runs)
            waited = sum(start - submitted for submitted, start, _ in runs)
            worked = sum(end - start for _, start, end in runs)
            parts.append((total, waited, worked, total - waited - worked, float(key in self.held_first)))
        if not parts:
            return "no first audio seen"
        names = ("first audio", "waited for a core", "worked", "between jobs")
        slowest = sorted(parts)[-max(1, len(parts) // 10) :]
        head = f"first audio of {len(parts)} streams, from the session's first job (ms)"
        rows = [f"{head}: median, P90, slowest tenth's mean"]
        held = f"{sum(p[4] for p in parts):.0f} of them, {sum(p[4] for p in slowest):.0f} of the slowest tenth"
        rows.append(f"  held back for thin streams: {held}")
        for i, name in enumerate(names):
            values = [p[i] for p in parts]
            p90, tail = percentile(values, 90), statistics.mean(p[i] for p in slowest)
            rows.append(f"  {name:18s} {statistics.median(values) * 1000:7.0f} {p90 * 1000:7.0f} {tail * 1000:7.0f}")
        return "\n".join(rows)

    def slowest_firsts(self, count: int) -> list[tuple[int, float, float]]:
        """The ``count`` streams whose first audio took longest from their first job's submission: each
        with that submission and its first audio (seconds from :meth:`start`)."""
        firsts = []
        for key, heard in self.first_audio.items():
            submitted = [run[0] for run in self.runs.get(key, []) if run[0] < heard]
            if submitted:
                firsts.append((heard - min(submitted), key, min(submitted) - self.t0, heard - self.t0))
        return [(key, since, heard) for _, key, since, heard in sorted(firsts, reverse=True)[:count]]

    def others(self, key: int, since: float, until: float) -> list[str]:
        """The jobs of streams other than ``key`` that ran between ``since`` and ``until``."""
        ran = sorted(job for job in self.jobs if job[2] != key and job[1] > since and job[0] < until)
        return [f"{start:8.3f}-{end:8.3f}  {self.rates.get(other)} Hz  {what}" for start, end, other, what in ran]


def _watch(timelines: _Timelines) -> None:
    """Wrap the playback clock and the session's pool calls (on the classes: every session is seen)."""
    on_audio: Callable[[PlaybackClock, float, float], float] = PlaybackClock.on_audio

    def audio(clock: PlaybackClock, now: float, seconds: float) -> float:
        wait = on_audio(clock, now, seconds)
        dry = f"  ran dry at {clock.audio_s - seconds:.2f} s of audio, waited {wait * 1000:.0f} ms" if wait else ""
        timelines.add(_key(clock), now, f"audio {seconds:.3f} s{dry}")
        if wait:
            timelines.dry.append((_key(clock), now, clock.audio_s - seconds, wait))
        timelines.first_audio.setdefault(_key(clock), now)
        return wait

    PlaybackClock.on_audio = audio  # type: ignore[method-assign,assignment]
    timed = session_module.SynthesisSession._timed

    async def traced(self: Any, fn: object, cost: float = 0.0) -> object:
        pool, deadline, dry_at = self._pool, self._deadline(), self._clock.runs_dry_at
        ran: dict[str, Any] = {}
        with pool._cond:
            queued, running, streams = len(pool._heap), len(pool._running), len(pool._streams)
            state = f"queued {queued} running {running} free {pool._free} streams {streams}"

        timelines.rates[_key(self._clock)] = self.sample_rate

        def run() -> object:
            ran["start"], ran["threads"] = time.monotonic(), current_thread_budget()
            try:
                return fn()  # type: ignore[operator]
            finally:
                ran["end"] = time.monotonic()

        submitted = time.monotonic()
        if self._stream is not None:
            timelines.pooled[id(self._stream)] = _key(self._clock)
        try:
            return await timed(self, run, cost)
        finally:
            due = "never" if deadline == float("inf") else f"{deadline - submitted:+.3f}"
            began, ended = ran.get("start", submitted) - submitted, ran.get("end", submitted) - submitted
            if "start" in ran:
                timelines.runs[_key(self._clock)].append((submitted, ran["start"], ran["end"]))
                job = (submitted, ran["start"], ran["end"], cost, deadline, ran.get("threads"))
                timelines.done[_key(self._clock)].append(job)
                if any(ran["start"] <= at <= ran["end"] for at in timelines.stops[_key(self._clock)]):
                    dry = dry_at is not None and ran["end"] > dry_at
                    timelines.stopped.append((ran["end"] > deadline, dry))
                what = f"job cost {cost:.3f} due {due} threads {ran.get('threads')}"
                timelines.jobs.append((ran["start"] - timelines.t0, ran["end"] - timelines.t0, _key(self._clock), what))
                if cost > 0.05:
                    timelines.held[self.sample_rate, ran.get("threads")].append((ran["end"] - ran["start"]) / cost)
                    start, end = ran["start"] - timelines.t0, ran["end"] - timelines.t0
                    timelines.slow.append(((end - start) / cost, _key(self._clock), start, end))
            timelines.add(
                _key(self._clock),
                submitted,
                f"job cost {cost:.3f} due {due} started +{began:.3f} ended +{ended:.3f} "
                f"threads {ran.get('threads')} | {state}",
            )

    session_module.SynthesisSession._timed = traced  # type: ignore[method-assign]
    waits = CoreSharing._waits

    def held(sharing: CoreSharing, job: Job, now: float) -> float | None:
        until = waits(sharing, job, now)
        if until is not None and id(job.stream) in timelines.pooled:
            timelines.held_first.add(timelines.pooled[id(job.stream)])
        return until

    CoreSharing._waits = held  # type: ignore[method-assign,assignment]
    resume = WorkerPool._resume

    def stopped(pool: WorkerPool, hold: Hold) -> None:
        was, at = hold.threads, time.monotonic()
        resume(pool, hold)
        key = timelines.pooled.get(id(hold.job.stream))
        if key is not None:
            timelines.stops[key].append(at)
            line = f"stopped on {was} threads, readmitted +{time.monotonic() - at:.3f} on {hold.threads}"
            timelines.add(key, at, f"{line}, expected {hold.cost:.3f} s")

    WorkerPool._resume = stopped  # type: ignore[method-assign,assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="en_US-joe-medium")
    parser.add_argument("--concurrency", default="8,12,16")
    parser.add_argument("--duration", default="30")
    parser.add_argument("--ramp", default="2", help="voxserve bench's --ramp (0: every listener at once)")
    parser.add_argument("--show", type=int, default=4, help="stalled streams whose timelines are printed")
    parser.add_argument("--beside", help="VOICE:LEVEL: a second load at the same time")
    parser.add_argument("--rate", type=int, help="show only the stalls of streams of this sample rate")
    parser.add_argument(
        "--slow-firsts",
        dest="slow_firsts",
        type=int,
        default=0,
        help="the slowest first audios whose streams' jobs and the others' are printed",
    )
    parser.add_argument(
        "--slow-jobs",
        dest="slow_jobs",
        type=int,
        default=0,
        help="the jobs longest against their expected cost whose stream's events and the others' jobs are printed",
    )
    parser.add_argument("--before", type=float, default=1.5, help="seconds of other jobs shown before a stall")
    parser.add_argument("--text-set", dest="text_set", default="short", help="the bench's texts (short, long, ...)")
    parser.add_argument("--port", type=int, default=18400)
    parser.add_argument("--output", default="bench-results/stall-timeline")
    args = parser.parse_args()

    served = start_server(args.port)
    state = served.state
    timelines = _Timelines()
    _watch(timelines)
    timelines.start()
    command = [sys.executable, "-m", "voxserve", "bench", "--url", f"http://127.0.0.1:{args.port}"]
    command += ["--grpc-target", f"127.0.0.1:{args.port + 1}", "--voice", args.voice]
    command += ["--concurrency", args.concurrency, "--duration", args.duration, "--ramp", args.ramp]
    command += ["--text-set", args.text_set]
    loads = [(args.voice, subprocess.Popen([*command, "--output", args.output], stdout=subprocess.PIPE, text=True))]
    if args.beside:
        voice, level = args.beside.split(":")
        beside = [*command, "--output", f"{args.output}-beside"]
        beside[beside.index(args.voice)], beside[beside.index(args.concurrency)] = voice, level
        loads.append((voice, subprocess.Popen(beside, stdout=subprocess.PIPE, text=True)))
    for voice, load in loads:
        out = load.communicate()[0]
        print(out[out.find(f"{voice}\n") :] or out[-2000:])
    print(timelines.held_table())
    print(timelines.first_audio_table())
    print(f"model calls stopped for a late job: {state.runtime.pool.preemptions}")
    late, dry = sum(late for late, _ in timelines.stopped), sum(dry for _, dry in timelines.stopped)
    print(f"  jobs stopped: {len(timelines.stopped)}, ended past their deadline {late}, after running dry {dry}")
    stalled = timelines.stalled(args.rate)
    print(timelines.causes())
    print(f"streams {len(timelines.events)}, stalled {len(timelines.stalled())}, shown of them {len(stalled)}")
    for key, events in stalled[: args.show]:
        print(f"----- a stream at {timelines.rates.get(key)} Hz")
        for at, line in events:
            print(f"{at:8.3f}  {line}")
        for at, line in events:
            if "ran dry" in line:
                print(f"  other streams' jobs in the {args.before} s before it ran dry at {at:.3f}:")
                print("\n".join(f"    {job}" for job in timelines.others(key, at - args.before, at)))
    for key, since, heard in timelines.slowest_firsts(args.slow_firsts):
        print(f"----- a first audio after {(heard - since) * 1000:.0f} ms, at {timelines.rates.get(key)} Hz")
        print("\n".join(f"{at:8.3f}  {line}" for at, line in sorted(timelines.events[key]) if at <= heard))
        print(f"  other streams' jobs from {args.before} s before its first job to its first audio:")
        print("\n".join(f"    {job}" for job in timelines.others(key, since - args.before, heard)))
    for ratio, key, start, end in sorted(timelines.slow, reverse=True)[: args.slow_jobs]:
        print(f"----- a job at {ratio:.2f} times its expected cost (margin included), at {timelines.rates.get(key)} Hz")
        print("\n".join(f"{at:8.3f}  {line}" for at, line in sorted(timelines.events[key]) if start - 1 <= at <= end))
        print("  other streams' jobs meanwhile:")
        print("\n".join(f"    {job}" for job in timelines.others(key, start, end)))
    served.stop()


if __name__ == "__main__":
    main()
