"""Every job and every piece of audio of the streams that stalled while ``voxserve bench`` loaded the server.

The server runs in this process (default settings but the rate limit), as in ``bench/admission_trace.py``;
``voxserve bench`` loads it from a subprocess. Each session's pool jobs are wrapped: for each, when it was
submitted (seconds since the load began), its expected cost, its deadline against that moment, when it
started and ended, the threads it ran with, and the pool at submission (jobs queued, running, cores free,
streams producing audio). Each piece of audio the listener received is listed with its length and, where
the listener had run dry, how long it waited. At the end, the timelines of the first ``--show`` streams
that stalled: where in the stream each ran dry and what the cores were doing meanwhile.

    .venv/bin/python -m bench.stall_timeline --concurrency 8,12,16 --ramp 0
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.in_process import start_server
from voxserve.engines.onnx import current_thread_budget
from voxserve.stream import session as session_module
from voxserve.stream.playback import PlaybackClock

Event = tuple[float, str]


class _Timelines:
    """Events per stream (keyed by its playback clock), with times from :meth:`start`."""

    def __init__(self) -> None:
        self.events: dict[int, list[Event]] = collections.defaultdict(list)
        self.t0 = time.monotonic()

    def start(self) -> None:
        self.events.clear()
        self.t0 = time.monotonic()

    def add(self, key: int, at: float, line: str) -> None:
        self.events[key].append((at - self.t0, line))

    def stalled(self) -> list[list[Event]]:
        return [sorted(ev) for ev in self.events.values() if any("ran dry" in line for _, line in ev)]


def _watch(timelines: _Timelines) -> None:
    """Wrap the playback clock and the session's pool calls (on the classes: every session is seen)."""
    on_audio: Callable[[PlaybackClock, float, float], float] = PlaybackClock.on_audio

    def audio(clock: PlaybackClock, now: float, seconds: float) -> float:
        wait = on_audio(clock, now, seconds)
        dry = f"  ran dry at {clock.audio_s - seconds:.2f} s of audio, waited {wait * 1000:.0f} ms" if wait else ""
        timelines.add(id(clock), now, f"audio {seconds:.3f} s{dry}")
        return wait

    PlaybackClock.on_audio = audio  # type: ignore[method-assign,assignment]
    timed = session_module.SynthesisSession._timed

    async def traced(self: Any, fn: object, cost: float = 0.0) -> object:
        pool, deadline = self._pool, self._deadline()
        ran: dict[str, Any] = {}
        with pool._cond:
            queued, running, streams = len(pool._heap), len(pool._running), len(pool._streams)
            state = f"queued {queued} running {running} free {pool._free} streams {streams}"

        def run() -> object:
            ran["start"], ran["threads"] = time.monotonic(), current_thread_budget()
            try:
                return fn()  # type: ignore[operator]
            finally:
                ran["end"] = time.monotonic()

        submitted = time.monotonic()
        try:
            return await timed(self, run, cost)
        finally:
            due = "never" if deadline == float("inf") else f"{deadline - submitted:+.3f}"
            began, ended = ran.get("start", submitted) - submitted, ran.get("end", submitted) - submitted
            timelines.add(
                id(self._clock),
                submitted,
                f"job cost {cost:.3f} due {due} started +{began:.3f} ended +{ended:.3f} "
                f"threads {ran.get('threads')} | {state}",
            )

    session_module.SynthesisSession._timed = traced  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="en_US-joe-medium")
    parser.add_argument("--concurrency", default="8,12,16")
    parser.add_argument("--duration", default="30")
    parser.add_argument("--ramp", default="2", help="voxserve bench's --ramp (0: every listener at once)")
    parser.add_argument("--show", type=int, default=4, help="stalled streams whose timelines are printed")
    parser.add_argument("--port", type=int, default=18400)
    parser.add_argument("--output", default="bench-results/stall-timeline")
    args = parser.parse_args()

    _, _, server = start_server(args.port)
    timelines = _Timelines()
    _watch(timelines)
    timelines.start()
    command = [sys.executable, "-m", "voxserve", "bench", "--url", f"http://127.0.0.1:{args.port}"]
    command += ["--grpc-target", f"127.0.0.1:{args.port + 1}", "--voice", args.voice]
    command += ["--concurrency", args.concurrency, "--duration", args.duration, "--ramp", args.ramp]
    done = subprocess.run([*command, "--output", args.output], capture_output=True, text=True, check=False)
    print(done.stdout[done.stdout.find(f"{args.voice}\n") :] or done.stderr[-2000:])
    stalled = timelines.stalled()
    print(f"streams {len(timelines.events)}, stalled {len(stalled)}")
    for events in stalled[: args.show]:
        print("-----")
        for at, line in events:
            print(f"{at:8.3f}  {line}")
    server.should_exit = True


if __name__ == "__main__":
    main()
