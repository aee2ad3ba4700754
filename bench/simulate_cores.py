"""Listeners served at 2, 4, 8 and 16 cores, simulated from the costs learned on this machine.

A bigger machine is not always at hand, and ``taskset`` can only take cores away. This script keeps
everything real except the model work:

1. **Learn.** It loads the real engine (``--engine kokoro|piper``) with its warm-up, as a server starts,
   and reads what this machine taught it: the decoder window cost (``WindowCost``: seconds per window
   and per decoded audio second) at each thread count the sessions were built for, and the segment
   front's cost before the first window (timed here, first audio less the first window's fitted cost).
   Costs at thread counts not measured come from Amdahl's law fitted to one and two threads.
2. **Simulate.** For each core count N it builds a runtime with the same settings but
   ``intra_op_threads=N`` (so the worker pool shares N cores, with elastic thread levels for N) and a
   fake engine (:class:`voxserve.engines.fake.FakeEngine`) whose model calls wait as long as the
   learned cost at the call's thread budget instead of computing. The session, window planner,
   scheduler, preemption and cost learning are the server's own code. Waiting takes no CPU, so 16
   simulated cores run on two real ones; the text front end (phonemization) still runs for real.
3. **Load.** ``--rounds`` rounds of L listeners, each arriving at a random moment within ``--spread``
   seconds and playing its audio in real time from the first chunk (``PlaybackClock``, the server's own
   underrun arithmetic), the issue's three-sentence reply. ``voxserve bench --find-capacity``'s search
   (:func:`voxserve.benchmark.capacity.find_capacity`: doubling, then bisecting) finds the most
   listeners whose requests stall at most 1 % and whose P90 first audio stays within 3× a lone one's.

    .venv/bin/python -m bench.simulate_cores --engine kokoro [--cores 2,4,8,16] [--rounds 3] [--costs FILE]
        [--levels 12,14 --seed N]

``--levels`` measures those listener counts at each core count instead of searching: several runs
with different ``--seed`` at once (each waits far more than it computes) give a larger sample of one
load than the search's three rounds.

``--real`` measures the same load with the real engine on this machine's own cores instead (every
other part as above), and ``--noise SIGMA`` makes each simulated model call cost a random factor
(lognormal, ``SIGMA``) of its learned cost, as real calls vary: run the two at ``--cores`` equal to this
machine's to see how far the simulation's stalls are from the machine's.

``--saturation K,...`` (with ``--real``) first runs K unpaced requests at once on the same runtime and
prints the audio seconds made per wall second: the saturation throughput the issue's targets compare
listeners with, measured in the same run (listeners served / the largest of these = the share of
saturation; note that past capacity more requests at once deliver less, see docs/benchmarks.md).
``--of-saturation F,...`` then measures listener counts at those fractions of the highest throughput
measured, so that machines of any speed (``bench/cores_device.sh``: 2 to 16 cores of a bigger one) are
loaded alike.

``--learn-under-load N`` learns the window costs from a round of N real listeners instead of from the
warm-up alone: under load this machine's windows cost about a third more than the warm-up teaches, and
a simulation from the warm-up's costs stalls far less than the machine does at the same load.

``--admission`` books each listener with the server's admission controller (default settings, one per
core count, learning its limit from the stalls as the server's does): a listener it refuses is a failed
request, and the levels then say how many listeners the server would serve on that many cores.

``--duration S`` makes each round a closed loop of S seconds: each listener asks again once its reply
has played (a refused one after a pause), as ``voxserve bench``'s listeners and ``bench/compare_trees.py``
do on a real server. A listener's later requests start where its replies end: with this one reply for
every listener they arrive close together again, in bursts like the round's opening one.

``--costs`` takes the costs another run learned (its first printed line) instead of learning them, so
two source trees are compared on the same costs: run this file with the other tree's ``src`` first on
``PYTHONPATH``.

What it leaves out: memory bandwidth and caches shared between cores (real cores scale worse than
waits do), and the server's transport work (HTTP, encoding), which runs on the real cores here. Run at
``--cores 2`` against a real 2-core load run to see how far the simulation is from the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.concurrency import VOICES
from voxserve.benchmark.capacity import find_capacity
from voxserve.benchmark.records import RequestRecord, record_from_arrivals
from voxserve.benchmark.stats import LevelSummary, summarize
from voxserve.benchmark.workload import FAILED_PAUSE_S
from voxserve.engines.fake import FakeEngine
from voxserve.engines.onnx import current_thread_budget, thread_budget
from voxserve.engines.registry import EngineLoad, LoadedEngine
from voxserve.errors import Overloaded
from voxserve.runtime import Runtime
from voxserve.server.admission import Admission
from voxserve.settings import Settings
from voxserve.stream.playback import PlaybackClock
from voxserve.types import SynthesisParams

TEXT = (
    "Thanks for calling, I can help you with that today. Your order shipped yesterday afternoon and should "
    "arrive by Thursday, weather permitting. Is there anything else I can check for you while we are on the line?"
)


@dataclass(frozen=True)
class Costs:
    """Seconds of model work at one thread count: per segment front, per model call, per decoded second
    (context included)."""

    front_s: float
    window_s: float
    audio_s: float


@dataclass(frozen=True)
class LearnedCosts:
    """The costs measured at one thread and at two, extended to any thread count by Amdahl's law."""

    one: Costs
    two: Costs

    def at(self, threads: int) -> Costs:
        def scale(c1: float, c2: float) -> float:
            if c1 <= 0:
                return c2
            parallel = min(1.0, max(0.0, 2 * (1 - c2 / c1)))  # the share of the work that threads split
            return c1 * ((1 - parallel) + parallel / threads)

        return Costs(*(scale(a, b) for a, b in zip(_fields(self.one), _fields(self.two), strict=True)))


def _fields(costs: Costs) -> tuple[float, float, float]:
    return costs.front_s, costs.window_s, costs.audio_s


def learn(engine_name: str, under_load: int = 0, spread: float = 2.0) -> LearnedCosts:
    """Load the real engine as a server does and read (or time) its costs at one and two threads.

    With ``under_load`` the window costs are those the engine learned from a round of that many real
    listeners on this machine's cores (as a server keeps them up to date), and each front's cost is
    scaled by as much as the audio's: on a 2-core VM they came out a third above what the warm-up
    teaches, enough to move a load from comfortable to the edge (docs/benchmarks.md)."""
    runtime = Runtime(Settings(_env_file=None, engines=[engine_name], intra_op_threads=2))
    runtime.load(warm=True)
    try:
        engine = runtime.engines[engine_name]
        voice = VOICES[engine_name]
        segments = runtime.frontend.phonemize(TEXT, "en-us", engine.alphabet, max_phonemes=engine.max_phonemes)
        first_s = runtime.tuning.window_first_ms / 1000
        config = runtime.window_config()
        measured = []
        for threads in (1, 2):
            fit = engine.window_cost.fit(threads) if engine.window_cost is not None else None
            if fit is None:
                raise RuntimeError(f"{engine_name} learned no window cost at {threads} threads")
            # the fit's per-window cost counts a middle window's context on both sides; a call is charged
            # for the audio it decodes, context included, so the per-call part is what remains
            audio_s = fit[1]
            window_s = max(0.0, fit[0] - 2 * config.context_s * audio_s)
            first_decoded_s = first_s + config.first_context_s + config.max_lead_s / 2
            fronts = []
            for _ in range(3):
                for segment in segments:
                    with thread_budget(threads):
                        started = time.perf_counter()
                        for _piece in engine.stream(segment.phonemes, voice, first_window_s=first_s):
                            break
                        first = time.perf_counter() - started
                    fronts.append(first - (window_s + audio_s * first_decoded_s))
            measured.append(Costs(max(0.0, statistics.median(fronts)), window_s, audio_s))
        if under_load and engine.window_cost is not None:
            asyncio.run(measure(runtime, voice, under_load, 1, spread))
            learned = engine.window_cost
            measured = [
                _loaded(costs, learned.fit(n), config.context_s) for n, costs in zip((1, 2), measured, strict=True)
            ]
        return LearnedCosts(*measured)
    finally:
        runtime.close()


def _loaded(alone: Costs, fit: tuple[float, float] | None, context_s: float) -> Costs:
    """``alone``'s costs as a load taught them (``fit``: the engine's window cost after it)."""
    if fit is None:
        return alone
    audio_s = fit[1]
    scale = audio_s / alone.audio_s if alone.audio_s > 0 else 1.0
    return Costs(alone.front_s * scale, max(0.0, fit[0] - 2 * context_s * audio_s), audio_s)


class LearnedCostEngine(FakeEngine):
    """A fake engine whose model calls cost what the real engine's cost at the call's thread budget,
    times a random factor (lognormal with ``noise`` as sigma; 0: exactly)."""

    def __init__(self, costs: LearnedCosts, cores: int, noise: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.costs, self.cores, self.noise = costs, cores, noise
        self._draws = random.Random(0)  # apart from the arrivals' draws, which stay those of --seed

    def work_seconds(self, decoded_s: float | None) -> float:
        c = self.costs.at(current_thread_budget() or self.cores)
        seconds = c.front_s if decoded_s is None else c.window_s + c.audio_s * decoded_s
        return seconds * self._draws.lognormvariate(0.0, self.noise) if self.noise > 0 else seconds


def simulated_runtime(engine_name: str, costs: LearnedCosts, cores: int, noise: float = 0.0) -> Runtime:
    voice = VOICES[engine_name]

    def load(load: EngineLoad) -> LoadedEngine:
        engine = LearnedCostEngine(
            costs,
            cores,
            noise,
            name=engine_name,
            voices={voice: "en-us"},
            sample_rate=24_000,
            windows=load.windows,
        )
        return LoadedEngine(engine)

    settings = Settings(_env_file=None, engines=[engine_name], intra_op_threads=cores, default_voice=voice)
    runtime = Runtime(settings, families={engine_name: load})
    runtime.load(warm=True)
    return runtime


async def listener(
    runtime: Runtime,
    voice: str,
    delay: float,
    concurrency: int,
    admission: Admission | None = None,
    *,
    since: float = 0.0,
) -> RequestRecord:
    """One listener arriving after ``delay`` and playing its audio in real time from the first chunk;
    with ``admission``, booked as the server books a stream (refused: a failed record), and admission
    told of its first stall or its clean end, as the server tells it. Its record starts ``since + delay``
    after its round's start."""
    await asyncio.sleep(delay)
    started, at = time.monotonic(), since + delay
    if admission is None:
        return await _play(runtime, voice, at, concurrency, started, lambda stalled: None)
    price = functools.partial(runtime.stream_share, runtime.engine_for(voice).name)
    try:
        async with admission.slot(price):
            return await _play(
                runtime, voice, at, concurrency, started, lambda stalled: admission.observe(price(), stalled)
            )
    except Overloaded as exc:
        failed = time.monotonic() - started
        return record_from_arrivals(
            [],
            transport="in-process",
            voice=voice,
            chars=len(TEXT),
            started_s=at,
            concurrency=concurrency,
            error=str(exc),
            failed_after_s=failed,
        )


async def _play(
    runtime: Runtime, voice: str, at: float, concurrency: int, started: float, teach: Callable[[bool], None]
) -> RequestRecord:
    """The listener of :func:`listener` once admitted; ``teach(stalled)`` at its first stall, or at its end
    when it never stalled."""
    session = runtime.open_session(SynthesisParams(voice=voice), pace=True)
    session.push_text(TEXT)
    session.close()
    clock, arrivals = PlaybackClock(), []
    async for chunk in session:
        now, seconds = time.monotonic(), len(chunk.samples) / chunk.sample_rate
        if seconds:
            arrivals.append((now - started, seconds))
        if clock.on_audio(now, seconds) and len(clock.stalls) == 1:
            teach(True)
    if not clock.stalls:
        teach(False)
    return record_from_arrivals(
        arrivals, transport="in-process", voice=voice, chars=len(TEXT), started_s=at, concurrency=concurrency
    )


async def measure(
    runtime: Runtime,
    voice: str,
    listeners: int,
    rounds: int,
    spread: float,
    admission: Admission | None = None,
    duration: float = 0.0,
) -> LevelSummary:
    """``rounds`` rounds of ``listeners`` arriving at random within ``spread`` seconds (a lone one at once).
    With ``duration``, each listener of a round asks again once its reply has played, until ``duration``
    seconds after the round's start, as ``voxserve bench``'s listeners do (a refused one after a pause)."""
    records: list[RequestRecord] = []
    started = time.monotonic()
    for _ in range(rounds):
        delays = [random.uniform(0, spread) if listeners > 1 else 0.0 for _ in range(listeners)]
        if not duration:
            records += await asyncio.gather(*(listener(runtime, voice, d, listeners, admission) for d in delays))
            continue
        loops = (_asks_again(runtime, voice, d, listeners, admission, duration) for d in delays)
        records += [r for own in await asyncio.gather(*loops) for r in own]
    return summarize(f"{listeners} listeners", listeners, records, time.monotonic() - started)


async def _asks_again(
    runtime: Runtime, voice: str, delay: float, concurrency: int, admission: Admission | None, duration: float
) -> list[RequestRecord]:
    """One listener of a closed loop: it joins after ``delay``, and asks again when its reply has played
    (:func:`voxserve.benchmark.workload.closed_loop`'s listener) until ``duration`` has passed."""
    round0 = time.monotonic()
    await asyncio.sleep(delay)
    records: list[RequestRecord] = []
    while (since := time.monotonic() - round0) < duration:
        record = await listener(runtime, voice, 0.0, concurrency, admission, since=since)
        records.append(record)
        now = time.monotonic() - round0
        played = record.started_s + record.played_s if record.ok else now + FAILED_PAUSE_S
        await asyncio.sleep(max(0.0, min(played, duration) - now))
    return records


async def saturation(runtime: Runtime, voice: str, requests: int) -> dict[str, float]:
    """``requests`` unpaced requests of the reply at once: audio seconds made per wall second."""

    async def one() -> float:
        session = runtime.open_session(SynthesisParams(voice=voice), pace=False)
        session.push_text(TEXT)
        session.close()
        return sum([len(chunk.samples) / chunk.sample_rate async for chunk in session])

    started = time.monotonic()
    audio_s = sum(await asyncio.gather(*(one() for _ in range(requests))))
    wall_s = time.monotonic() - started
    return {"saturation_requests": requests, "audio_s": audio_s, "wall_s": wall_s, "x_real_time": audio_s / wall_s}


def real_load(
    engine_name: str, levels: str, rounds: int, spread: float, unpaced: str | None = None, of_saturation: str = ""
) -> None:
    """The same listeners against the real engine on this machine's cores (as a server loads it), after
    the saturation throughput of ``unpaced`` (request counts) if given. ``of_saturation`` adds listener
    counts at those fractions of the highest throughput measured (a listener takes one audio second per
    second), so that machines of any speed are loaded alike against their own saturation."""
    runtime = Runtime(Settings(_env_file=None, engines=[engine_name]))
    runtime.load(warm=True)
    try:
        best = 0.0
        for k in (int(k) for k in unpaced.split(",")) if unpaced else ():
            result = asyncio.run(saturation(runtime, VOICES[engine_name], k))
            best = max(best, result["x_real_time"])
            print(json.dumps(result), flush=True)
        counts = [int(n) for n in levels.split(",") if n]
        counts += [max(1, round(float(f) * best)) for f in of_saturation.split(",") if f and best]
        for n in counts:
            summary = asyncio.run(measure(runtime, VOICES[engine_name], n, rounds, spread))
            print(json.dumps({"cores": "real", **summary.to_json()}, default=str), flush=True)
    finally:
        runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", default="kokoro", choices=sorted(VOICES))
    parser.add_argument("--cores", default="2,4,8,16")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per listener count")
    parser.add_argument("--spread", type=float, default=2.0, help="listeners arrive within this many seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--levels", help="listener counts to measure (e.g. 3,4) instead of searching for capacity")
    parser.add_argument(
        "--costs", help="the first line another run printed, in a file: its learned costs (to compare two trees)"
    )
    parser.add_argument("--noise", type=float, default=0.0, help="sigma of each simulated call's random cost factor")
    parser.add_argument("--real", action="store_true", help="the real engine on this machine's cores, no simulation")
    parser.add_argument("--saturation", help="with --real: unpaced request counts to measure throughput at first")
    parser.add_argument(
        "--of-saturation", default="", help="with --saturation: listener counts at these fractions of it (0.5,0.8)"
    )
    parser.add_argument(
        "--learn-under-load", type=int, default=0, metavar="N", help="learn the costs from N real listeners at once"
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=0.0,
        help="each listener asks again once its reply has played, for this many seconds a round (0: once)",
    )
    parser.add_argument(
        "--admission", action="store_true", help="admit listeners as the server does (default settings), per core count"
    )
    args = parser.parse_args()
    random.seed(args.seed)
    if args.real:
        levels = args.levels or ("" if args.of_saturation else "1,2,3")
        real_load(args.engine, levels, args.rounds, args.spread, args.saturation, args.of_saturation)
        return
    if args.costs:
        with open(args.costs) as f:
            learned = json.loads(f.readline())["learned"]
        costs = LearnedCosts(Costs(**learned["one_thread"]), Costs(**learned["two_threads"]))
    else:
        costs = learn(args.engine, args.learn_under_load, args.spread)
    print(json.dumps({"learned": {"one_thread": costs.one.__dict__, "two_threads": costs.two.__dict__}}), flush=True)
    voice = VOICES[args.engine]
    found: dict[int, int] = {}
    for cores in (int(c) for c in args.cores.split(",")):
        runtime = simulated_runtime(args.engine, costs, cores, args.noise)
        admission = Admission.from_settings(Settings(_env_file=None)) if args.admission else None

        async def level(
            n: int, runtime: Runtime = runtime, cores: int = cores, admission: Admission | None = admission
        ) -> LevelSummary:
            summary = await measure(runtime, voice, n, args.rounds, args.spread, admission, args.duration)
            limit = {"admission_limit": admission.limit} if admission is not None else {}
            print(json.dumps({"cores": cores, **summary.to_json(), **limit}, default=str), flush=True)
            return summary

        try:
            if args.levels:
                for n in (int(n) for n in args.levels.split(",")):
                    asyncio.run(level(n))
                continue
            result = asyncio.run(find_capacity(level))
        finally:
            runtime.close()
        found[cores] = result.capacity
        verdicts = [f"{v.concurrency}: {v.reason}" for v in result.verdicts]
        print(json.dumps({"cores": cores, "capacity": result.capacity, "verdicts": verdicts}), flush=True)
    print(json.dumps({"engine": args.engine, "capacity_by_cores": found}), flush=True)


if __name__ == "__main__":
    main()
