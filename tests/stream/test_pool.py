"""WorkerPool: runs work off the event loop, earliest deadline first, errors and cancellation."""

from __future__ import annotations

import asyncio
import functools
import itertools
import threading
import time
from typing import Any

import pytest

from voxserve.stream.jobs import Hold, Job, first_late
from voxserve.stream.pool import WorkerPool


async def test_runs_off_the_event_loop_and_returns_results() -> None:
    pool = WorkerPool(1)
    try:
        main = threading.get_ident()
        ident = await pool.run(threading.get_ident)
        assert ident != main
        assert await pool.run(lambda: 6 * 7) == 42
    finally:
        pool.close()


async def test_exceptions_reach_the_caller() -> None:
    pool = WorkerPool(1)
    try:
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 / 0)
        assert await pool.run(lambda: "still serving") == "still serving"
    finally:
        pool.close()


async def _run_order(jobs: dict[str, dict[str, Any]], pool: WorkerPool | None = None) -> list[str]:
    """The order a single busy worker (or ``pool``'s single core) runs ``jobs`` (name: ``pool.run``
    keywords) in once it is free, 0.1 s from now."""
    pool = pool or WorkerPool(1)
    order: list[str] = []
    gate = threading.Event()
    try:
        blocker = asyncio.ensure_future(pool.run(gate.wait))
        await asyncio.sleep(0.05)  # the single worker is now busy
        queued = [asyncio.ensure_future(pool.run(functools.partial(order.append, n), **kw)) for n, kw in jobs.items()]
        await asyncio.sleep(0.05)
        assert pool.queue_depth == len(jobs)
        gate.set()
        await asyncio.gather(blocker, *queued)
        return order
    finally:
        pool.close()


async def test_earliest_deadline_runs_first() -> None:
    now = time.monotonic()
    order = await _run_order(
        {"later chunk of a long stream": {"deadline": now + 5}, "first chunk of a new request": {"deadline": now}}
    )
    assert order == ["first chunk of a new request", "later chunk of a long stream"]


async def test_cancelled_jobs_are_skipped() -> None:
    pool = WorkerPool(1)
    ran: list[int] = []
    gate = threading.Event()
    try:
        blocker = asyncio.ensure_future(pool.run(gate.wait))
        await asyncio.sleep(0.05)
        doomed = asyncio.ensure_future(pool.run(lambda: ran.append(1)))
        await asyncio.sleep(0.01)
        doomed.cancel()
        gate.set()
        await blocker
        await pool.run(lambda: None)
        assert ran == []
    finally:
        pool.close()


def test_a_job_outliving_its_event_loop_does_not_kill_the_worker() -> None:
    pool = WorkerPool(1)
    gate = threading.Event()
    try:

        async def submit_and_leave() -> None:
            job = asyncio.ensure_future(pool.run(gate.wait))
            await asyncio.sleep(0.05)  # the job is running; this loop closes when we return
            job.cancel()

        asyncio.run(submit_and_leave())
        gate.set()  # the job finishes after its loop is closed

        async def still_served() -> str:
            return await asyncio.wait_for(pool.run(lambda: "ok"), timeout=5)

        assert asyncio.run(still_served()) == "ok"
    finally:
        pool.close()


def test_load_counts_streams_per_worker() -> None:
    pool = WorkerPool(workers=2)
    try:
        assert pool.load == 1.0
        with pool.streaming():
            assert pool.load == 1.0  # one stream on two workers: nobody shares
            with pool.streaming(), pool.streaming(), pool.streaming():
                assert pool.load == 2.0
        assert pool.load == 1.0
    finally:
        pool.close()


def test_the_pool_is_crowded_while_more_streams_are_thin_than_jobs_can_run() -> None:
    """More thin streams (``spare`` below 0) than jobs at ``threads`` can run at once: they cannot all get
    a core at once, so none may cut its window to catch up (:func:`voxserve.stream.window_budget.next_window_s`)."""
    pool = WorkerPool(4, cores=2, levels=(2, 1))
    try:
        with pool.streaming(spare=lambda: -0.1), pool.streaming(spare=lambda: -0.1):
            with pool.streaming(spare=lambda: 2.0):
                assert not pool.crowded(1)  # two thin streams, two single-core jobs at once
                assert pool.crowded(2)  # ... but one job of two threads
            with pool.streaming(spare=lambda: -0.1):
                assert pool.crowded(1)
        assert not pool.crowded(None)
    finally:
        pool.close()

    unshared = WorkerPool(2)  # no shared cores: a job slot per worker
    try:
        with unshared.streaming(spare=lambda: -1), unshared.streaming(spare=lambda: -1):
            assert not unshared.crowded(None)
            with unshared.streaming(spare=lambda: -1):
                assert unshared.crowded(None)
    finally:
        unshared.close()


async def test_shared_cores_a_lone_job_gets_them_all_concurrent_streams_one_each() -> None:
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(2, cores=2, levels=(2, 1))
    try:
        assert await pool.run(current_thread_budget) == 2
        assert pool.share() == (2, 1.0)
        with pool.streaming():
            assert await pool.run(current_thread_budget) == 2  # one stream: every core
            with pool.streaming():
                assert pool.share() == (1, 1.0)  # two streams: a core each, side by side
                both = threading.Barrier(2, timeout=5)

                def meet() -> int | None:
                    both.wait()  # fails unless the two jobs run at the same time
                    return current_thread_budget()

                assert await asyncio.gather(pool.run(meet), pool.run(meet)) == [1, 1]
                with pool.streaming():
                    assert pool.share() == (1, 1.5)  # three streams on two one-core slots
    finally:
        pool.close()


async def test_shared_cores_are_split_by_what_the_streams_need() -> None:
    """A stream that needs a tenth of the cores another needs (a Piper voice beside a Kokoro one) counts
    as a tenth of a stream for the heavier one, whose jobs keep every core while the lighter one's
    listener can wait for them; the lighter one counts the heavier one whole and decodes on a core.
    Streams of equal need split the cores as before."""
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(2, cores=2, levels=(2, 1))
    try:
        with pool.streaming(need=_heavy) as heavy, pool.streaming(need=_light) as light:
            assert pool.share(need=0.8) == (2, pytest.approx(1.1))  # nearly alone: every core
            assert pool.share(need=0.08) == (1, 1.0)  # beside a whole stream: a core
            assert pool.share() == (1, 1.0)  # not told a need: every stream counts whole
            later = time.monotonic() + 5  # not overdue: an overdue job takes its share among overdue ones
            assert await pool.run(current_thread_budget, deadline=later, stream=heavy) == 2
            assert await pool.run(current_thread_budget, deadline=later, stream=light) == 1
        # but not for longer than a light stream's listener can wait: then the equal share, as before
        soon = [time.monotonic() + 0.3]
        with pool.streaming(need=_heavy) as heavy, pool.streaming(lambda: soon[0], need=_light):
            assert await pool.run(current_thread_budget, deadline=later, cost=1.0, stream=heavy) == 1
            soon[0] = time.monotonic() + 10
            assert await pool.run(current_thread_budget, deadline=later, cost=1.0, stream=heavy) == 2
            with pool.streaming(need=_heavy):
                assert pool.share(need=0.8) == (1, pytest.approx(1.05))  # two heavy streams: a core each
                assert await pool.run(current_thread_budget, deadline=later, stream=heavy) == 1
            with pool.streaming(need=lambda threads: None):
                assert pool.share(need=0.8)[0] == 1  # a need not learned yet counts whole
    finally:
        pool.close()


async def test_a_stream_with_time_to_spare_decodes_on_fewer_cores_and_leaves_one_to_a_newcomer() -> None:
    """A job planned on every core runs on one when its work there (as much longer as its stream's learned
    costs at the two counts say) still ends by its deadline: alone, a stream far ahead of its listener
    leaves a core free, so a caller who arrives meanwhile starts at once, without waiting for that
    window or stopping it. A job whose deadline is nearer, and a first audio, keep every core; so does
    a job whose planned thread count is not known."""
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(4, cores=2, levels=(2, 1))
    try:
        with pool.streaming(need=_heavy) as alone:
            now = time.monotonic()
            # 1.0 s planned on two threads is 0.8 / 0.45 * 1.0 = 1.78 s on one
            far, near = now + 5.0, now + 1.5  # 1.78 s fits before the far one even if started late
            assert await pool.run(current_thread_budget, deadline=far, cost=1.0, stream=alone, threads=2) == 1
            assert await pool.run(current_thread_budget, deadline=near, cost=1.0, stream=alone, threads=2) == 2
            assert await pool.run(current_thread_budget, deadline=now + 2.0, cost=1.0, stream=alone) == 2
            first = pool.run(
                current_thread_budget, deadline=now + 2.0, cost=1.0, playing=False, stream=alone, threads=2
            )
            assert await first == 2
            started, release = threading.Event(), threading.Event()

            def window() -> int | None:
                started.set()
                release.wait(5)
                return current_thread_budget()

            ahead = asyncio.ensure_future(
                pool.run(window, deadline=time.monotonic() + 10, cost=1.0, stream=alone, threads=2)
            )
            await asyncio.to_thread(started.wait, 5)
            with pool.streaming(need=_heavy) as newcomer:
                began = time.monotonic()
                assert await pool.run(current_thread_budget, cost=0.2, playing=False, stream=newcomer) == 1
                assert time.monotonic() - began < 1.0  # it did not wait for the window
            release.set()
            assert await ahead == 1
        assert pool.preemptions == 0
    finally:
        pool.close()


async def test_a_heavy_streams_job_waits_for_a_light_ones_short_job_rather_than_start_narrow() -> None:
    """Beside a light stream, a heavy one keeps every core; when the light stream's short job holds one,
    the heavy stream's window waits for it and runs on both, done sooner than on one core. Not when the
    light job is expected to hold its core longer than the window would lose narrow, nor when the light
    stream's listener needs audio before the window would be done on both cores."""
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(2, cores=2, levels=(2, 1))
    gate = threading.Event()

    def short() -> int | None:
        gate.wait(5)
        return current_thread_budget()

    def release_soon() -> None:
        time.sleep(0.2)
        gate.set()

    light_due = [0.0]
    try:
        with pool.streaming(need=_heavy) as heavy, pool.streaming(lambda: light_due[0], need=_light) as light:
            # the window, 1 s of work on two cores, would take 0.8 / 0.45 times as long on one
            for light_cost, light_ahead, threads in ((0.3, 10.0, 2), (2.0, 10.0, 1), (0.3, 0.5, 1)):
                gate.clear()
                later = time.monotonic() + 5
                light_due[0] = time.monotonic() + light_ahead
                running = asyncio.ensure_future(pool.run(short, deadline=later, cost=light_cost, stream=light))
                await asyncio.sleep(0.05)  # the light job holds a core
                threading.Thread(target=release_soon).start()
                assert await pool.run(current_thread_budget, deadline=later, cost=1.0, stream=heavy) == threads
                assert await running == 1
    finally:
        pool.close()


def _heavy(threads: int) -> float:
    """A Kokoro-like stream's work per audio second: 0.8 s at one thread, 0.45 s at two."""
    return 0.8 if threads == 1 else 0.45


def _light(threads: int) -> float:
    """A Piper-like stream's: a tenth of the heavy one's."""
    return 0.08


async def test_shared_cores_a_job_waits_while_a_wide_one_holds_every_core() -> None:
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(2, cores=2, levels=(2, 1))
    gate = threading.Event()
    started: list[tuple[str, int | None]] = []

    def job(name: str, wait: bool) -> None:
        started.append((name, current_thread_budget()))
        if wait:
            gate.wait(5)

    try:
        wide = asyncio.ensure_future(pool.run(lambda: job("wide", True)))
        await asyncio.sleep(0.1)
        with pool.streaming(), pool.streaming():
            # a playing stream's job (not yet due: no claim on every core)
            other = asyncio.ensure_future(pool.run(lambda: job("other", False), deadline=time.monotonic() + 5))
            await asyncio.sleep(0.2)
            assert started == [("wide", 2)]  # no core free: the second worker waits
            gate.set()
            await asyncio.gather(wide, other)
        assert started == [("wide", 2), ("other", 1)]
    finally:
        pool.close()


def test_shared_cores_need_a_one_thread_level() -> None:
    with pytest.raises(ValueError, match="levels"):
        WorkerPool(2, cores=2, levels=(2,))


async def test_an_overdue_job_takes_every_free_core_shared_only_with_other_overdue_ones() -> None:
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(4, cores=2, levels=(2, 1))
    try:
        with pool.streaming(), pool.streaming():  # one stream plays, one starts
            later = time.monotonic() + 5
            assert await pool.run(current_thread_budget, deadline=later) == 1  # the playing stream's share
            # the starting one (its first audio is due at once): every core
            assert await pool.run(current_thread_budget, deadline=time.monotonic()) == 2
            both = threading.Barrier(2, timeout=5)

            def meet() -> int | None:
                both.wait()  # fails unless the two jobs run at the same time
                return current_thread_budget()

            # two streams starting at once split the cores instead of taking turns
            now = time.monotonic()
            assert await asyncio.gather(pool.run(meet, deadline=now), pool.run(meet, deadline=now)) == [1, 1]
    finally:
        pool.close()


async def test_overdue_jobs_get_the_thread_level_nearest_their_share_not_the_one_below() -> None:
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(8, cores=16, levels=(16, 4, 1))
    try:
        # five jobs due at once share sixteen cores: about three each, and four is nearer than one
        four = threading.Barrier(4, timeout=5)
        calls = itertools.count()

        def meet() -> int | None:
            if next(calls) < 4:
                four.wait()  # the first four run side by side
            return current_thread_budget()

        now = time.monotonic()
        budgets = await asyncio.gather(*(pool.run(meet, deadline=now) for _ in range(5)))
        assert budgets[:4] == [4, 4, 4, 4]  # the fifth found no core free and ran after them
    finally:
        pool.close()


async def test_streams_past_their_deadline_share_the_cores_even_between_their_jobs() -> None:
    """Two streams whose listeners are short of audio take turns submitting windows. Each window gets
    its share of the cores, not all of them because the other stream's next job is not queued yet:
    taking turns on every core is slower than side by side, and both fell behind (seen simulated)."""
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(4, cores=2, levels=(2, 1))
    try:
        dry = time.monotonic() - 0.1
        with pool.streaming(lambda: dry), pool.streaming(lambda: dry):
            assert await pool.run(current_thread_budget, deadline=dry) == 1
        with pool.streaming(lambda: dry), pool.streaming(lambda: time.monotonic() + 5):
            assert await pool.run(current_thread_budget, deadline=dry) == 2  # the other has audio in hand
    finally:
        pool.close()


async def test_a_new_streams_first_audio_does_not_overtake_a_listener_about_to_run_dry() -> None:
    now = time.monotonic()
    order = await _run_order(
        {
            # a listener runs dry in 0.2 s and its window takes 0.5 s: it should have started already
            "window of a playing stream": {"deadline": now + 0.2, "cost": 0.5},
            # a caller who just arrived: its first audio is due now, and can start no earlier than now
            "first audio of a new one": {"deadline": now, "cost": 0.3, "playing": False},
        }
    )
    assert order == ["window of a playing stream", "first audio of a new one"]


async def test_a_jobs_cores_are_free_before_its_result_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller's next job, sent the moment a result arrives, must find the cores that job used
    (under load the result could arrive first, and the next first-audio job ran on one core)."""
    import voxserve.stream.pool as pool_module
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(4, cores=2, levels=(2, 1))
    free_at_delivery: list[int] = []
    deliver = pool_module.deliver

    def watching(*args: Any) -> None:
        free_at_delivery.append(pool._free)
        deliver(*args)

    monkeypatch.setattr(pool_module, "deliver", watching)
    try:
        with pool.streaming():
            assert await pool.run(current_thread_budget) == 2
        assert free_at_delivery == [2]
    finally:
        pool.close()


async def test_a_job_that_can_wait_leaves_the_free_core_to_a_stream_between_two_jobs() -> None:
    """A stream whose window just ended submits its next one a moment later. A job of a stream far ahead
    that took the core freed in between would leave it none until that job is done (seen simulated: the
    short stream's listener ran dry); it waits for the short stream instead."""
    pool = WorkerPool(2, cores=1, levels=(1,))
    order: list[str] = []
    try:
        now = time.monotonic()
        with pool.streaming(lambda: now + 5) as ahead:
            with pool.streaming(lambda: now + 0.05) as short:
                far = asyncio.ensure_future(
                    pool.run(functools.partial(order.append, "far ahead"), deadline=now + 5, cost=1.0, stream=ahead)
                )
                await asyncio.sleep(0.1)
                assert order == []  # the core is free, but the short stream needs it before 1 s of work is done
                await pool.run(functools.partial(order.append, "short"), deadline=now + 0.05, cost=0.01, stream=short)
            await asyncio.wait_for(far, 1.0)  # the short stream is gone: the far job runs at once
        assert order == ["short", "far ahead"]
    finally:
        pool.close()


async def test_a_job_holds_its_cores_only_until_another_stream_needs_one() -> None:
    pool = WorkerPool(2, cores=2, levels=(2, 1))
    try:
        now = time.monotonic()
        with pool.streaming(lambda: now + 9) as mine:
            assert pool.hold_limit(mine, 1) == float("inf")  # nobody else
            with pool.streaming(lambda: now + 0.3):
                # one other stream: it can have the second core whenever it needs one
                assert pool.hold_limit(mine, 1) == float("inf")
                with pool.streaming(lambda: now + 0.6):
                    # two others need both cores by 0.6 s: this job must be done by then
                    assert pool.hold_limit(mine, 1) == pytest.approx(0.6, abs=0.05)
                    assert pool.hold_limit(mine, 2) == pytest.approx(0.3, abs=0.05)  # on both cores: by 0.3 s
    finally:
        pool.close()


async def test_a_late_job_leaves_the_free_core_to_a_stream_that_needs_audio_sooner() -> None:
    """Under load every stream is past its latest start (the margins see to that), and a stream between
    two jobs has none queued: the queued job of a stream with more audio in hand took each core its
    window freed, and the shorter stream's listener ran dry (seen simulated with three streams on two
    cores). The job waits for the stream that needs audio sooner, at most until its own deadline."""
    pool = WorkerPool(2, cores=1, levels=(1,))
    order: list[str] = []
    try:
        now = time.monotonic()
        with pool.streaming(lambda: now + 0.4) as longer, pool.streaming(lambda: now - 0.1) as shorter:
            job = functools.partial(order.append, "longer")
            waiting = asyncio.ensure_future(pool.run(job, deadline=now + 0.4, cost=0.5, stream=longer))
            await asyncio.sleep(0.1)
            assert order == []  # late, and still waiting: the shorter stream needs the core first
            await pool.run(functools.partial(order.append, "shorter"), deadline=now - 0.1, cost=0.01, stream=shorter)
            await asyncio.wait_for(waiting, 1.0)
            assert order == ["shorter", "longer"]

            # a stream that never asks for the core keeps it from the job only until the job's deadline
            again = time.monotonic()
            job = functools.partial(order.append, "longer again")
            await asyncio.wait_for(pool.run(job, deadline=again + 0.2, cost=0.5, stream=longer), 1.0)
            assert time.monotonic() - again >= 0.15
    finally:
        pool.close()


async def test_a_new_stream_waits_for_a_thin_playing_stream_at_most_three_times_its_own_work() -> None:
    """A playing stream with too little audio coming to keep gaining at this load (its ``spare`` below 0)
    needs the core it would lose to a new stream's first audio; the new stream waits until it is thick
    enough, or at most three times its own expected work after arriving: in a burst every stream that
    just got its first window is thin at once, and a newcomer let go after its own work took the core
    their second windows needed. A stream resuming after a wait for its client's text (not ``new``)
    goes then; a new one is refused (the next test)."""
    pool = WorkerPool(2, cores=1, levels=(1,))
    order: list[str] = []
    spare = [-0.1]
    try:
        with pool.streaming(lambda: time.monotonic() + 1, lambda: spare[0]) as thin, pool.streaming() as new:
            arrived = time.monotonic()
            job = functools.partial(order.append, "first audio")
            first = asyncio.ensure_future(pool.run(job, cost=0.4, playing=False, stream=new))
            await asyncio.sleep(0.1)
            assert order == []  # held back while the playing stream is thin
            spare[0] = 0.5
            await pool.run(functools.partial(order.append, "thin"), deadline=time.monotonic() + 1, stream=thin)
            await asyncio.wait_for(first, 0.2)  # thick again: the first audio goes at once (it is due first)
            assert order == ["first audio", "thin"]
            assert time.monotonic() - arrived < 0.35

            spare[0] = -0.1
            arrived = time.monotonic()
            await asyncio.wait_for(pool.run(job, cost=0.1, playing=False, stream=new), 1.0)
            waited = time.monotonic() - arrived
            assert 0.28 <= waited < 0.6  # thin all along: it went after three times its own work
    finally:
        pool.close()


async def test_a_new_stream_still_held_for_a_thin_one_after_its_wait_is_refused_and_the_pool_serves_on() -> None:
    """Seen in CI: a third Kokoro listener on two cores, held for thin streams, went after its wait and
    the first listener ran dry. A stream's first audio ever (``new``) that would still take a thin
    stream's core after three times its own work is refused as at capacity (with a Retry-After), never
    started; the thin stream keeps the core, and a newcomer arriving once it has gained is served."""
    from voxserve.errors import Overloaded

    pool = WorkerPool(2, cores=1, levels=(1,))
    order: list[str] = []
    spare = [-0.1]
    try:
        with pool.streaming(lambda: time.monotonic() + 1, lambda: spare[0]) as thin:
            with pool.streaming() as refused:
                arrived = time.monotonic()
                job = functools.partial(order.append, "refused")
                with pytest.raises(Overloaded, match="at capacity") as caught:
                    await asyncio.wait_for(pool.run(job, cost=0.1, playing=False, stream=refused, new=True), 1.0)
                assert 0.28 <= time.monotonic() - arrived < 0.6  # after its whole wait, not before
                assert caught.value.retry_after_s and order == []  # never started
            await pool.run(functools.partial(order.append, "thin"), deadline=time.monotonic() + 1, stream=thin)
            spare[0] = 0.5  # it gained
            with pool.streaming() as later:
                job = functools.partial(order.append, "served")
                await asyncio.wait_for(pool.run(job, cost=0.1, playing=False, stream=later, new=True), 0.2)
            assert order == ["thin", "served"]
    finally:
        pool.close()


async def test_a_new_stream_held_for_a_thin_one_leaves_it_every_core_even_while_it_decodes() -> None:
    """Seen in the arrival trace: a caller arriving 0.45 s after another took one of two cores while the
    first had 0.5 s of audio ahead; the first, on one core, ran dry. A thin stream (its ``spare`` below
    0) decoding now is as short of audio as one between two jobs, and a core of its own is not enough
    while it is thin: the new stream waits, and the thin stream's next job gets both cores."""
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(2, cores=2, levels=(2, 1))
    gate = threading.Event()
    spare = [-0.1]
    threads: list[int | None] = []
    order: list[str] = []

    def decode(name: str, wait: bool) -> None:
        threads.append(current_thread_budget())
        order.append(name)
        if wait:
            gate.wait(5)

    try:
        with pool.streaming(lambda: time.monotonic() + 1, lambda: spare[0]) as thin:
            running = asyncio.ensure_future(
                pool.run(functools.partial(decode, "thin", True), deadline=time.monotonic() + 1, stream=thin)
            )
            await asyncio.sleep(0.05)
            with pool.streaming() as new:
                first = asyncio.ensure_future(
                    pool.run(functools.partial(decode, "first audio", False), cost=2.0, playing=False, stream=new)
                )
                await asyncio.sleep(0.1)
                assert order == ["thin"]  # a core is free, but the thin stream needs more than one
                assert pool.share(held=False) == (2, 1.0)  # the held stream takes no share yet
                assert pool.share() == (1, 1.0)  # once it runs: a core each (what ``spare`` is measured at)
                # nor does its waiting job cut the thin stream's windows: it needs no core until let go
                assert pool.hold_limit(thin, 2) == float("inf")
                gate.set()
                await running
                nxt = functools.partial(decode, "thin again", False)
                await pool.run(nxt, deadline=time.monotonic() + 1, stream=thin)
                assert threads == [2, 2]  # both cores, with a new stream waiting
                assert not first.done()
                spare[0] = 0.5  # it has gained enough: the new stream goes
                await pool.run(lambda: None, deadline=time.monotonic() + 1, stream=thin)
                await asyncio.wait_for(first, 1.0)
                assert order[-1] == "first audio"
    finally:
        pool.close()


async def test_a_new_streams_first_audio_leaves_a_playing_stream_its_share_of_the_cores() -> None:
    """A first audio is due on arrival, so it counts as overdue, but it is not a listener running dry:
    with a stream playing (between two jobs, well supplied) it starts on its equal share of the cores,
    and the playing stream's next window finds the other core free (seen on the real model: the
    newcomer took both cores, and the playing stream's next window waited for them and came late)."""
    from voxserve.engines.onnx import current_thread_budget

    pool = WorkerPool(4, cores=2, levels=(2, 1))
    try:
        with pool.streaming(lambda: time.monotonic() + 1, lambda: 0.5), pool.streaming() as new:
            assert await pool.run(current_thread_budget, cost=0.1, playing=False, stream=new) == 1
        with pool.streaming() as alone:  # nobody else: every core
            assert await pool.run(current_thread_budget, cost=0.1, playing=False, stream=alone) == 2
    finally:
        pool.close()


async def test_a_new_stream_that_takes_no_playing_streams_share_does_not_wait_for_thin_ones() -> None:
    """With cores to spare (sixteen, levels 16/4/1: three streams decode on four cores each, as two do),
    holding a new stream back would give a thin one nothing: it starts at once."""
    pool = WorkerPool(4, cores=16, levels=(16, 4, 1))
    try:
        with pool.streaming(lambda: time.monotonic() + 1, lambda: -0.1), pool.streaming(), pool.streaming() as new:
            arrived = time.monotonic()
            await asyncio.wait_for(pool.run(lambda: None, cost=2.0, playing=False, stream=new), 1.0)
            assert time.monotonic() - arrived < 0.5
    finally:
        pool.close()


async def test_the_pool_counts_the_core_seconds_its_jobs_held() -> None:
    shared = WorkerPool(2, cores=2, levels=(2, 1))
    alone = WorkerPool(1, job_threads=3)  # no shared cores: every job runs with the sessions' 3 threads
    try:
        assert shared.held_core_s == 0.0
        await shared.run(functools.partial(time.sleep, 0.1))  # a lone job holds both cores
        assert 0.2 <= shared.held_core_s < 2.0
        before = shared.held_core_s
        with shared.streaming(), shared.streaming():  # two streams: a core each, side by side
            await asyncio.gather(*(shared.run(functools.partial(time.sleep, 0.1)) for _ in range(2)))
        assert 0.2 <= shared.held_core_s - before < 2.0
        await alone.run(functools.partial(time.sleep, 0.05))
        assert 0.15 <= alone.held_core_s < 1.5
    finally:
        shared.close()
        alone.close()


def _job(key: float, cost: float, first: bool) -> Job:
    loop = asyncio.new_event_loop()
    try:
        return Job(key, 0, print, loop, loop.create_future(), key if first else key + cost, cost, None, first)
    finally:
        loop.close()


def test_the_first_playing_job_that_newcomers_ahead_would_start_late_is_found() -> None:
    newcomers = [_job(0.0, 0.1, first=True) for _ in range(3)]
    playing = _job(0.25, 0.1, first=False)  # latest start 0.25 s
    assert first_late([0.0], [*newcomers, playing]) is playing  # one core: it would start at 0.3 s
    assert first_late([0.0], [*newcomers[:2], playing]) is None  # behind two it starts at 0.2 s
    assert first_late([0.0, 0.0], [*newcomers, playing]) is None  # two cores: at 0.1 s
    assert first_late([0.0, 0.35], [*newcomers, playing]) is playing  # the second core busy until 0.35 s: at 0.3 s


async def _order_behind(newcomers: int) -> list[str]:
    """The order one busy core runs ``newcomers`` first audios (0.1 s of work each) and a playing stream's
    window (0.1 s, due 0.45 s from now) in once it is free (0.1 s from now)."""
    now = time.monotonic()
    jobs = {f"new {n}": {"deadline": now, "cost": 0.1, "playing": False} for n in range(newcomers)}
    jobs["playing"] = {"deadline": now + 0.45, "cost": 0.1}
    return await _run_order(jobs, WorkerPool(2, cores=1, levels=(1,)))


async def test_a_playing_stream_goes_before_newcomers_only_when_those_ahead_would_make_it_late() -> None:
    # behind one newcomer the window starts at 0.2 s, well before its latest start (0.35 s)
    assert await _order_behind(1) == ["new 0", "playing"]
    # behind four it would start at 0.5 s: past its latest start, so it goes first
    assert await _order_behind(4) == ["playing", "new 0", "new 1", "new 2", "new 3"]


def test_a_stopped_job_is_priced_at_the_cores_it_gets_back() -> None:
    """A job holding two cores, done again on one, takes twice its cost: what it can give away shrinks by
    that, and once readmitted on one core its cost is that, and it is late if that no longer fits."""
    loop = asyncio.new_event_loop()
    try:
        now = time.monotonic()
        job = Job(now + 2.0, 0, lambda: None, loop, loop.create_future(), due=now + 3.0, cost=1.0)
        hold = Hold(threading.Condition(), lambda _: None, job, 2, late=False)
        assert hold.cost_at(2) == hold.cost_at(4) == 1.0  # as wide or wider: as it was priced
        assert hold.cost_at(1) == 2.0
        assert hold.spare(now) == pytest.approx(2.0)  # done again at its own width
        assert hold.spare(now, 1) == pytest.approx(1.0)  # done again on one core
        hold.readmitted(1, now + 0.5)
        assert (hold.threads, hold.cost, hold.late) == (1, 2.0, False)  # 2 s of work, 2.5 s to its deadline
        hold.readmitted(1, now + 0.5)  # stopped and readmitted again on one core: no dearer
        assert hold.cost == 2.0 and hold.remaining(now + 1.5) == pytest.approx(1.0)
        late = Hold(threading.Condition(), lambda _: None, job, 2, late=False)
        late.readmitted(1, now + 1.5)
        assert late.late and late.spare(now + 1.5) == 0.0  # 2 s of work, 1.5 s left: never stopped again
    finally:
        loop.close()
