from __future__ import annotations

import asyncio

import pytest

from voxserve.errors import Overloaded
from voxserve.server.admission import Admission


async def test_cap_queue_and_refusal() -> None:
    seen: list[tuple[int, int]] = []
    adm = Admission(max_streams=2, max_queue=1, on_change=lambda a, q, limit: seen.append((a, q)))
    first = await adm.acquire()
    second = await adm.acquire()
    waiter = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    assert (adm.active, adm.queued) == (2, 1)
    with pytest.raises(Overloaded) as info:
        await adm.acquire()
    assert info.value.retry_after_s is not None
    adm.release(first)  # hands the slot to the waiter
    third = await asyncio.wait_for(waiter, 1)
    assert (adm.active, adm.queued) == (2, 0)
    adm.release(second)
    adm.release(third)
    assert adm.active == 0
    assert seen[-1] == (0, 0)


async def test_queue_timeout_refuses() -> None:
    adm = Admission(max_streams=1, max_queue=5, queue_timeout_s=0.05)
    await adm.acquire()
    with pytest.raises(Overloaded, match="timed out"):
        await adm.acquire()
    assert adm.queued == 0


async def test_cancelled_waiter_leaves_queue() -> None:
    adm = Admission(max_streams=1, max_queue=5)
    held = await adm.acquire()
    waiter = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert adm.queued == 0
    adm.release(held)
    assert adm.active == 0


async def test_draining_refuses_new_and_queued() -> None:
    adm = Admission(max_streams=1, max_queue=5)
    async with adm.slot():
        waiter = asyncio.create_task(adm.acquire())
        await asyncio.sleep(0)
        adm.start_draining()
        with pytest.raises(Overloaded, match="shutting down"):
            await waiter
        with pytest.raises(Overloaded):
            await adm.acquire()
    await asyncio.wait_for(adm.wait_idle(), 1)


def test_queue_timeout_comes_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from voxserve.server.state import ServerState
    from voxserve.settings import Settings

    from .fakes import BlockedLoadRuntime

    monkeypatch.setenv("VOXSERVE_QUEUE_TIMEOUT_S", "2.5")
    settings = Settings(_env_file=None)
    state = ServerState.build(settings, runtime=BlockedLoadRuntime())
    assert state.admission.queue_timeout_s == 2.5


async def test_streams_are_admitted_by_their_share_of_the_machine() -> None:
    adm = Admission(max_streams=100, max_queue=0)
    booked = [await adm.acquire(0.3) for _ in range(3)]  # 0.9 of the cores
    assert adm.load == pytest.approx(0.9)
    assert adm.fits(0.1) and not adm.fits(0.3)
    with pytest.raises(Overloaded, match="capacity"):
        await adm.acquire(0.3)  # would take the load to 1.2: refused at once, nothing queued
    cheap = await adm.acquire(0.05)  # a cheaper engine's stream still fits
    assert adm.load == pytest.approx(0.95)
    adm.release(booked[0])
    assert adm.fits(0.3)
    for booking in [*booked[1:], cheap]:
        adm.release(booking)
    assert adm.load == 0.0 and adm.active == 0


async def test_a_waiting_stream_starts_when_enough_capacity_is_freed() -> None:
    adm = Admission(max_streams=100, max_queue=2, queue_timeout_s=5)
    first = await adm.acquire(0.6)
    second = await adm.acquire(0.3)
    big = asyncio.create_task(adm.acquire(0.5))
    small = asyncio.create_task(adm.acquire(0.05))  # fits now, but waits its turn: no overtaking
    await asyncio.sleep(0)
    assert adm.queued == 2 and not small.done()
    adm.release(second)  # 0.6 + 0.5 > 1: the head still does not fit
    await asyncio.sleep(0)
    assert adm.queued == 2
    adm.release(first)  # both fit now, in order
    assert (await asyncio.wait_for(big, 1)).price() == 0.5
    assert (await asyncio.wait_for(small, 1)).price() == 0.05
    assert adm.load == pytest.approx(0.55)


async def test_the_first_stream_is_always_admitted_and_unknown_costs_count_as_slots() -> None:
    adm = Admission(max_streams=4, max_queue=0)
    slow = await adm.acquire(1.7)  # a machine too slow for even one real-time stream still serves one
    with pytest.raises(Overloaded):
        await adm.acquire(0.01)
    adm.release(slow)
    for n in range(1, 5):  # no learned cost: each stream books 1 / max_streams
        await adm.acquire(None)
        assert adm.load == pytest.approx(0.25 * n)
    assert not adm.fits(None)


async def test_unknown_costs_fill_a_limit_below_every_core_with_max_streams() -> None:
    adm = Admission(max_streams=4, max_queue=0, max_load=0.8)
    for n in range(1, 5):  # a GPU learns no share: max_streams streams still fit under the headroom
        await adm.acquire(None)
        assert adm.load * adm.limit == pytest.approx(0.2 * n)
    assert adm.load == pytest.approx(1.0) and not adm.fits(None)
    with pytest.raises(Overloaded):
        await adm.acquire(None)


async def test_the_default_admits_up_to_four_fifths_of_the_measured_capacity() -> None:
    from voxserve.server.state import ServerState
    from voxserve.settings import Settings

    from .fakes import BlockedLoadRuntime

    admission = ServerState.build(Settings(_env_file=None), runtime=BlockedLoadRuntime()).admission
    await admission.acquire(0.4)
    assert admission.fits(0.4) and not admission.fits(0.45)  # a fifth of the cores stays free


async def test_stalls_teach_the_limit_and_clean_streams_give_it_back() -> None:
    adm = Admission(max_streams=100, max_queue=0, max_load=1.0)
    streams = [await adm.acquire(0.2) for _ in range(5)]  # every core booked
    adm.observe(0.2, stalled=True)  # the cores were enough on paper, but a listener still ran dry
    assert adm.limit == pytest.approx(0.8) and adm.load == pytest.approx(1.0 / 0.8)
    for _ in range(3):
        adm.observe(0.2, stalled=True)  # more listeners of the same overload: one stream under its load
    assert adm.limit == pytest.approx(0.8) and not adm.fits(0.2)
    with pytest.raises(Overloaded):
        await adm.acquire(0.2)
    adm.release(streams.pop())
    adm.release(streams.pop())
    assert adm.fits(0.2)  # a load of 0.6: another fits under 0.8
    adm.observe(0.2, stalled=True)  # a stall below the limit: a new overload lowers it by one stream
    assert adm.limit == pytest.approx(0.6) and not adm.fits(0.2)
    for _ in range(300):
        adm.observe(0.2, stalled=False)  # the three streams stalled beyond the first are owed first
    assert adm.limit == pytest.approx(0.6)
    for _ in range(100):
        adm.observe(0.2, stalled=False)  # then a hundred clean streams give one stream's share back
    assert adm.limit == pytest.approx(0.8) and adm.fits(0.2)
    for _ in range(1000):
        adm.observe(0.2, stalled=False)
    assert adm.limit == 1.0  # never above what the operator allows
    adm.release(streams.pop())
    for _ in range(20):
        adm.observe(0.2, stalled=True)  # two streams playing, stalling again and again
    assert adm.limit == pytest.approx(0.2)  # never below one stream


async def test_a_listener_that_runs_dry_alone_leaves_the_limit_where_it_was() -> None:
    """Only a stall beside other streams says the load was too much: a lone stream's (a fresh server's
    first request, another process taking the cores) would otherwise refuse a second listener for the
    next hundred streams."""
    adm = Admission(max_streams=100, max_queue=0, max_load=0.8)
    await adm.acquire(0.35)
    for share in (0.35, 0.3, 0.5):  # its share as learned by the time it stalls, not always as booked
        adm.observe(share, stalled=True)
    assert adm.limit == pytest.approx(0.8) and adm.fits(0.35)
    await adm.acquire(0.35)
    adm.observe(0.35, stalled=True)  # the same stall with a second stream playing lowers it
    assert adm.limit == pytest.approx(0.45) and not adm.fits(0.35)


async def test_a_stall_takes_the_stream_admitted_last_off_the_limit() -> None:
    """A stream must not run dry for streams that came after it: the one admitted last is the one the
    limit should have refused. Beside light streams a heavy one's stall takes a light one off the limit
    (which the light streams' clean ends give back), and a heavy newcomer's takes itself off."""
    heavy, light = 0.4, 0.05
    adm = Admission(max_streams=100, max_queue=0, max_load=0.8)
    await adm.acquire(heavy)
    lights = [await adm.acquire(light) for _ in range(8)]
    adm.observe(heavy, stalled=True)
    assert adm.limit == pytest.approx(0.75) and not adm.fits(light)
    adm.release(lights.pop())
    adm.release(lights.pop())
    assert adm.fits(light) and not adm.fits(2 * light)  # up to one light stream fewer than when it stalled
    for _ in range(100):
        adm.observe(light, stalled=False)  # a hundred clean light streams give it back
    assert adm.limit == pytest.approx(0.8)

    late = Admission(max_streams=100, max_queue=0, max_load=0.8)
    for _ in range(7):
        await late.acquire(light)
    newcomer = await late.acquire(heavy)  # admitted last
    late.observe(light, stalled=True)
    assert late.limit == pytest.approx(0.4) and not late.fits(light)
    late.release(newcomer)
    assert late.fits(light) and not late.fits(heavy)  # the light streams as before the heavy one came


async def test_a_burst_owes_what_it_did_not_take_off_the_limit_and_never_more_than_the_limit() -> None:
    adm = Admission(max_streams=100, max_queue=0, max_load=1.0)
    for _ in range(10):
        await adm.acquire(0.1)
    for _ in range(10):
        adm.observe(0.1, stalled=True)  # every stream of one overload stalls
    assert adm.limit == pytest.approx(0.9)  # lowered once
    for _ in range(890):
        adm.observe(0.1, stalled=False)  # nine streams owed: a hundred clean streams each
    assert adm.limit == pytest.approx(0.9)
    for _ in range(20):
        adm.observe(0.1, stalled=False)
    assert adm.limit == pytest.approx(0.91)  # paid off after 900: the limit rises again
    small = Admission(max_streams=100, max_queue=0, max_load=1.0)
    for _ in range(4):
        await small.acquire(0.25)
    for _ in range(50):
        small.observe(0.25, stalled=True)  # far more stalled than the limit could owe
    assert small.limit == pytest.approx(0.75)
    for _ in range(300 + 100):
        small.observe(0.25, stalled=False)  # the debt is at most the limit (three streams): then it rises
    assert small.limit == pytest.approx(1.0)


async def test_running_streams_are_priced_by_what_is_learned_now() -> None:
    """A fresh server books its first streams at their first job's cost until the core meter's first
    sample. A booking holds what prices it, so such a stream counts at the learned cost once there is
    one, not at its first price to its end (the first long stream of a new replica held it full)."""
    price = 0.9
    adm = Admission(max_streams=100, max_queue=0, max_load=0.8)
    await adm.acquire(lambda: price)
    assert adm.load == pytest.approx(0.9 / 0.8)
    with pytest.raises(Overloaded):
        await adm.acquire(0.05)
    price = 0.35  # the meter's first sample
    assert adm.load == pytest.approx(0.35 / 0.8) and adm.fits(lambda: price)
    await adm.acquire(lambda: price)
    assert adm.load == pytest.approx(0.7 / 0.8) and not adm.fits(0.35)
    price = 0.45  # the machine turned out slower: the streams running count at that, none is let in
    assert adm.load == pytest.approx(0.9 / 0.8) and not adm.fits(0.05)


async def test_the_pool_refusing_a_burst_lowers_the_limit_once() -> None:
    """Seen by a user: thirty Piper callers at once on a fresh server. Admission let them all in, the pool
    refused 24 of them one after another, and each refusal lowered the limit by one stream, 0.8 to 0.21:
    a refused stream's booking goes at once, so the next refusal met a load under the limit and counted
    as a new overload. Afterwards one Kokoro stream fitted where three had. The refusals of one burst
    lower the limit once; a stream admitted after that and refused too lowers it again."""
    adm = Admission(max_streams=100, max_queue=0, max_load=0.8)
    streams = [await adm.acquire(0.025) for _ in range(30)]
    for booking in streams[6:]:
        adm.observe(0.025, stalled=True, refused=True)
        adm.release(booking)
    assert adm.limit == pytest.approx(0.775)
    later = await adm.acquire(0.025)  # admitted under the lowered limit, and refused as well
    adm.observe(0.025, stalled=True, refused=True)
    adm.release(later)
    assert adm.limit == pytest.approx(0.75)


async def test_the_load_reads_full_when_max_streams_are_running() -> None:
    """``voxserve_load`` is what an autoscaler scales on: a replica at its operator's ``max_streams`` is
    full (``/readyz`` says so), however little of the cores those streams book."""
    adm = Admission(max_streams=2, max_queue=0, max_load=0.8)
    assert adm.load == 0.0
    await adm.acquire(0.1)
    assert adm.load == pytest.approx(0.5)  # one of two streams: fuller than 0.1 of 0.8
    await adm.acquire(0.1)
    assert adm.load == pytest.approx(1.0) and not adm.fits(0.1)
