"""WorkerPool preemption with real ONNX Runtime calls: an urgent job (a stream's first audio) stops a
call of a job that has time to spare, and that call is made again later with the same result; and a
reading far ahead, on one core, leaves the other to a caller, so that nothing need be stopped."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from dataclasses import replace
from typing import cast

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from scipy.signal import correlate, stft

from voxserve.engines.fake import FakeEngine
from voxserve.engines.onnx import RunControl, current_thread_budget
from voxserve.engines.preemption import work_timer
from voxserve.engines.windowing import run_graph
from voxserve.errors import Cancelled
from voxserve.runtime import Runtime
from voxserve.stream.playback import PlaybackClock
from voxserve.stream.pool import WorkerPool
from voxserve.stream.window_budget import WindowPlanner
from voxserve.types import SynthesisParams

pytestmark = pytest.mark.alone  # it times a caller's first audio against a running stream's

SIZE = 384
SAMPLE_RATE = 24_000  # Kokoro's


@pytest.fixture(scope="module")
def slow_session() -> ort.InferenceSession:
    """A real graph that takes a while: 60 chained 384x384 matrix products (each normalized)."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array((rng.standard_normal((SIZE, SIZE)) / np.sqrt(SIZE)).astype(np.float32), "w")
    nodes, last = [], "x"
    for i in range(60):
        nodes.append(helper.make_node("MatMul", [last, "w"], [f"m{i}"]))
        nodes.append(helper.make_node("Tanh", [f"m{i}"], [f"t{i}"]))
        last = f"t{i}"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    graph = helper.make_graph(
        nodes,
        "slow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SIZE, SIZE])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [SIZE, SIZE])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _inputs(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((SIZE, SIZE)).astype(np.float32)}


def _timed_call(session: ort.InferenceSession, seed: int, control: RunControl | None = None) -> float:
    started = time.perf_counter()
    run_graph(session, ["y"], _inputs(seed), "slow graph", control)
    return time.perf_counter() - started


def _flagged_call(flag: threading.Event, session: ort.InferenceSession, control: RunControl) -> float:
    flag.set()
    return _timed_call(session, 1, control)


async def _started(flag: threading.Event) -> None:
    for _ in range(200):
        if flag.is_set():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the first job never started")


async def test_a_late_job_stops_a_call_with_time_to_spare_and_the_call_is_made_again(
    slow_session: ort.InferenceSession,
) -> None:
    call_s = _timed_call(slow_session, 0)
    (expected,) = slow_session.run(["y"], _inputs(1))
    pool = WorkerPool(4, cores=2, levels=(2, 1))
    started, finished = threading.Event(), []

    timings: list[float] = []

    def long_job() -> np.ndarray:
        started.set()
        begun = time.perf_counter()
        with work_timer() as spent:
            (out,) = run_graph(slow_session, ["y"], _inputs(1), "slow graph")
        timings.extend([time.perf_counter() - begun, spent()])
        finished.append("long")
        return np.asarray(out)

    def urgent_job() -> int | None:
        finished.append("urgent")
        time.sleep(0.2)  # holding every core
        return current_thread_budget()

    try:
        long = asyncio.ensure_future(pool.run(long_job, deadline=time.monotonic() + 30, cost=call_s))
        await _started(started)
        await asyncio.sleep(call_s / 4)  # the call is now in flight
        threads = await pool.run(urgent_job, deadline=time.monotonic(), cost=0.2)
        assert threads == 2  # the late job had every core
        assert finished == ["urgent"]  # ... while the long call was stopped
        out = await long
        assert finished == ["urgent", "long"]
        assert pool.preemptions == 1
        np.testing.assert_array_equal(out, expected)  # made again from the same inputs: nothing lost
        elapsed, work = timings
        assert elapsed - work >= 0.2  # the stopped work and the wait are not counted as work
    finally:
        pool.close()


async def test_a_call_whose_audio_is_due_soon_is_not_stopped(slow_session: ort.InferenceSession) -> None:
    call_s = _timed_call(slow_session, 0)
    pool = WorkerPool(4, cores=2, levels=(2, 1))
    started, finished = threading.Event(), []

    def long_job() -> None:
        started.set()
        run_graph(slow_session, ["y"], _inputs(1), "slow graph")
        finished.append("long")

    try:
        # the call's audio is due when it is done: stopping it for anything would make it late
        long = asyncio.ensure_future(pool.run(long_job, deadline=time.monotonic() + call_s, cost=call_s))
        await _started(started)
        await asyncio.sleep(call_s / 4)
        await pool.run(lambda: finished.append("urgent"), deadline=time.monotonic(), cost=0.1)
        await long
        assert finished == ["long", "urgent"]  # it waited for the call, which had too little to spare
        assert pool.preemptions == 0
    finally:
        pool.close()


async def test_a_call_on_every_core_is_stopped_only_if_it_can_be_made_again_on_its_share(
    slow_session: ort.InferenceSession,
) -> None:
    """A job stopped on both cores for a newcomer is readmitted beside it, on one core: its work again
    takes twice as long. A deadline that leaves room for the newcomer's job and the call again on both
    cores, but not on one, keeps it running (stopped, it came late on a real box: docs/benchmarks.md,
    "A stopped window is priced at the cores it gets back (stop 58)")."""
    call_s = _timed_call(slow_session, 0)
    pool = WorkerPool(4, cores=2, levels=(2, 1))
    started, finished = threading.Event(), []

    def long_job() -> int | None:
        started.set()
        run_graph(slow_session, ["y"], _inputs(1), "slow graph")
        finished.append("long")
        return current_thread_budget()

    try:
        with pool.streaming() as reading:  # alone: its job gets both cores
            now = time.monotonic()
            long = asyncio.ensure_future(pool.run(long_job, deadline=now + 1.9 * call_s, cost=call_s, stream=reading))
            await _started(started)
            await asyncio.sleep(call_s / 4)
            with pool.streaming() as caller:  # the newcomer: each stream's share is one core now
                urgent = functools.partial(finished.append, "urgent")
                await pool.run(urgent, deadline=time.monotonic(), cost=0.3 * call_s, stream=caller)
            assert await long == 2
        assert finished == ["long", "urgent"]  # on both cores it could have been stopped; on one it would be late
        assert pool.preemptions == 0
    finally:
        pool.close()


async def test_a_stopped_stream_cancelled_while_it_waits_fails_as_cancelled(slow_session: ort.InferenceSession) -> None:
    call_s = _timed_call(slow_session, 0)
    pool = WorkerPool(4, cores=2, levels=(2, 1))
    control, started, gate = RunControl(), threading.Event(), threading.Event()

    def urgent_job() -> str:
        control.cancel()  # the stopped stream's caller hangs up meanwhile
        gate.wait(5)
        return "first audio"

    try:
        long = asyncio.ensure_future(
            pool.run(lambda: _flagged_call(started, slow_session, control), deadline=time.monotonic() + 30, cost=call_s)
        )
        await _started(started)
        await asyncio.sleep(call_s / 4)
        urgent = asyncio.ensure_future(pool.run(urgent_job, deadline=time.monotonic(), cost=0.1))
        await asyncio.sleep(0.1)
        gate.set()
        assert await urgent == "first audio"
        with pytest.raises(Cancelled):
            await long
        assert await pool.run(lambda: "still serving") == "still serving"
    finally:
        pool.close()


# A window sized to its listener's slack leaves nothing to spare (its cost, with the planning margin,
# fills the slack), so only a window held below that size can be stopped. The reading's windows are
# capped at 1 s of audio, and its sentences end in long pauses, which cost no model work and come with
# the sentence's last piece: after its first sentence the reading is seconds ahead of playback even on a
# machine that makes Kokoro at half real time.
READING_WINDOW_S = 1.0
READING_PAUSE_MS = 5000


class Interruption:
    """A reading and a caller of ``runtime`` that record when their first and last chunks came. The
    caller starts once the pool runs a call of the reading that could be stopped for it
    (:meth:`~voxserve.stream.pool.WorkerPool.stoppable_s`), or one on a single core (:meth:`speak_when_narrow`):
    the moment each test is about, reached by watching for it rather than by timings that hold on one
    machine only."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.firsts: dict[str, float] = {}
        self.lasts: dict[str, float] = {}
        self.stopped_before: dict[str, int] = {}  # calls the pool had stopped when a text was sent
        self.stopped_by_first: dict[str, int] = {}  # ... and when its first audio came
        self.reading_done = asyncio.Event()
        self.reading_config = replace(
            runtime.session_config(pace=False),
            max_window_s=READING_WINDOW_S,
            max_unpaced_window_s=READING_WINDOW_S,
            sentence_pause_ms=READING_PAUSE_MS,
        )

    async def speak(self, text: str, reading: bool = False) -> np.ndarray:
        config = self.reading_config if reading else None
        session = self.runtime.open_session(SynthesisParams(voice="af_heart"), pace=False, config=config)
        session.push_text(text)
        session.close()
        chunks = []
        async for chunk in session:
            if text not in self.firsts:
                self.stopped_by_first[text] = self.runtime.pool.preemptions
            self.firsts.setdefault(text, time.monotonic())
            self.lasts[text] = time.monotonic()
            chunks.append(chunk.samples)
        if reading:
            self.reading_done.set()
        return np.concatenate(chunks)

    async def speak_when_narrow(self, text: str) -> np.ndarray:
        """Speak ``text`` once the pool runs a call of the reading on one core (the reading is far enough
        ahead to be done in time there), counting the calls stopped until its first audio."""
        pool = self.runtime.pool
        while not any(hold.threads == 1 and hold.armed is not None for hold in pool._running):
            assert not self.reading_done.is_set(), "the reading never decoded on one core"
            await asyncio.sleep(0.005)
        self.stopped_before[text] = pool.preemptions
        return await self.speak(text)

    async def speak_when_stoppable(self, text: str) -> np.ndarray:
        pool, best, needed = self.runtime.pool, 0.0, self._first_job_s()
        while (stoppable := pool.stoppable_s()) < needed:
            best = max(best, stoppable)
            assert not self.reading_done.is_set(), f"no call of the reading could be stopped (best {best:.2f} s)"
            await asyncio.sleep(0.005)
        return await self.speak(text)

    def _first_job_s(self) -> float:
        """More than the caller's first job is expected to cost (its text's front and first window, at
        one thread, planned for two streams; :meth:`WindowPlanner.segment_cost`): a running call is
        stopped only for a job it can make room for and still be done in time
        (:meth:`~voxserve.stream.pool.WorkerPool._preempt_for`)."""
        engine, config = self.runtime.engine_for("af_heart"), self.runtime.session_config()
        assert engine.window_cost is not None and engine.window_cost.fit(1) is not None, "no cost learned"
        planner = WindowPlanner(engine, cast(WorkerPool, _BesideTheReading()), config, PlaybackClock())
        return planner.segment_cost() + 0.2


class _BesideTheReading:
    """The pool as the caller's windows are planned beside the reading, at the most they cost: one
    thread, two streams per job slot."""

    def share(self, held: bool = True, need: float | None = None, newcomer: bool = False) -> tuple[int, float]:
        return 1, 2.0


async def test_a_caller_arriving_mid_stream_takes_the_core_a_reading_far_ahead_leaves_and_both_sound_as_alone(
    runtime: Runtime,
) -> None:
    """Real Kokoro sessions: a reading far ahead of playback decodes its windows on one core, since it is
    done in time there (:meth:`~voxserve.stream.sharing.CoreSharing._enough`), so a new caller's first
    audio starts on the core it leaves free: before the reading ends, and nothing is stopped for it (on a tree
    without that rule the reading held every core and its window was stopped for the caller). Both
    streams come out as they do alone."""
    reading_text = (
        "The library opens at nine on weekdays and at ten on weekends. Books may be borrowed for three "
        "weeks and renewed twice online. Late returns cost ten cents a day, up to the price of the book, "
        "which is charged to the card that borrowed it once the book is more than two months overdue."
    )
    caller_text = "Hello, how can I help you today?"
    speaking = Interruption(runtime)
    firsts, lasts = speaking.firsts, speaking.lasts

    reading_alone, caller_alone = await speaking.speak(reading_text, reading=True), await speaking.speak(caller_text)
    speaking.reading_done.clear()
    reading, caller = await asyncio.gather(
        speaking.speak(reading_text, reading=True), speaking.speak_when_narrow(caller_text)
    )
    # a core was free for the caller: no window was stopped for its first audio
    assert speaking.stopped_by_first[caller_text] == speaking.stopped_before[caller_text]
    assert firsts[caller_text] < lasts[reading_text]  # the caller did not wait for the reading
    # nothing lost or made twice, and the same speech. The reading's windows are cut differently from the
    # lone reading's wherever the caller held a core (the reading's windows are then sized to hand it back
    # in time), so the audio matches up to the seams of other cuts: a silence trim at a seam moves the
    # length by a few milliseconds (76 samples seen), where a window lost or made twice would move it by
    # 0.4 s or more
    assert abs(len(reading) - len(reading_alone)) <= 0.02 * SAMPLE_RATE
    assert _spectral_difference(reading, reading_alone) < 0.2
    # the caller's windows were sized for two streams, not one: other cuts, the same speech. The pause
    # after its first clause is measured on the piece that ends the clause, so other cuts move it (by up
    # to about 0.23 s seen: the clause's last piece may hold its speech's end or only silence); a window
    # lost or made twice would change the length by 0.4 s or more
    assert abs(len(caller) - len(caller_alone)) <= 0.3 * SAMPLE_RATE
    assert _clause_difference(caller, caller_alone) < 0.2


def _spectral_difference(a: np.ndarray, b: np.ndarray) -> float:
    """How far two renderings of the same speech differ: the distance of their magnitude spectrograms,
    each scaled to unit norm, once the two are aligned at the lag (within 50 ms) where they correlate
    best. It is blind to a start that moved by a few milliseconds (a silence trim at another seam) and to
    the level (the loudness of a segment is evened from the pieces it came in); about 0.05-0.12 for the
    same speech cut into other windows, and 0.3 or more where 0.4 s is lost or made twice."""
    a, b = _aligned(a, b, max_lag=SAMPLE_RATE // 20)
    _, _, sa = stft(a, nperseg=512)
    _, _, sb = stft(b, nperseg=512)
    sa, sb = np.abs(sa), np.abs(sb)
    return float(np.linalg.norm(sa / np.linalg.norm(sa) - sb / np.linalg.norm(sb)))


def _aligned(a: np.ndarray, b: np.ndarray, max_lag: int) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` cut to the same length from the lag (at most ``max_lag`` samples) at which they
    correlate best."""
    correlation = correlate(a, b, mode="full", method="fft")
    zero = len(b) - 1
    low, high = max(0, zero - max_lag), min(len(correlation), zero + max_lag + 1)
    lag = int(np.argmax(correlation[low:high])) + low - zero  # a[t + lag] matches b[t]
    a, b = (a[lag:], b) if lag > 0 else (a, b[-lag:])
    n = min(len(a), len(b))
    return a[:n], b[:n]


def _clause_difference(a: np.ndarray, b: np.ndarray) -> float:
    """The larger :func:`_spectral_difference` of the two clauses of each signal, split at its longest
    pause: each clause is aligned on its own, so a pause that other window cuts lengthen or shorten does
    not set one signal's second clause against the other's silence."""
    return max(_spectral_difference(x, y) for x, y in zip(_clauses(a), _clauses(b), strict=True))


def _clauses(signal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``signal`` split in the middle of its longest pause (the longest run below 2 % of its peak)."""
    loud = np.flatnonzero(np.abs(signal) > 0.02 * np.abs(signal).max())
    widest = int(np.argmax(np.diff(loud)))
    cut = (loud[widest] + loud[widest + 1]) // 2
    return signal[:cut], signal[cut:]


async def test_on_the_fake_engine_a_new_caller_stops_a_reading_window_and_nothing_is_lost(
    fake_runtime: Runtime,
) -> None:
    """The same interruption on the fake engine (a window costs a third of its audio's length): the stopped
    window is made again, and both streams are what they are alone (the fake's audio does not depend on
    where windows are cut)."""
    runtime = fake_runtime
    engine = runtime.engines["kokoro"]
    assert isinstance(engine, FakeEngine)
    reading_text = "The library opens at nine on weekdays and at ten on weekends. " * 2
    caller_text = "Hello, how can I help you today?"
    speaking = Interruption(runtime)
    firsts, lasts = speaking.firsts, speaking.lasts

    pool, before = runtime.pool, runtime.pool.preemptions
    engine.audio_s = 0.3
    try:
        reading_alone, caller_alone = (
            await speaking.speak(reading_text, reading=True),
            await speaking.speak(caller_text),
        )
        speaking.reading_done.clear()
        reading, caller = await asyncio.gather(
            speaking.speak(reading_text, reading=True), speaking.speak_when_stoppable(caller_text)
        )
    finally:
        engine.audio_s = FakeEngine().audio_s
    assert pool.preemptions > before
    assert firsts[caller_text] < lasts[reading_text]  # the caller did not wait for the reading
    # nothing lost or made twice: the same length; the level may differ a little (the loudness of a
    # segment is evened from the pieces it came in)
    assert len(reading) == len(reading_alone) and len(caller) == len(caller_alone)
    assert _spectral_difference(reading, reading_alone) < 0.05 and _spectral_difference(caller, caller_alone) < 0.05
