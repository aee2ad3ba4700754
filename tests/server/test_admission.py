from __future__ import annotations

import asyncio

import pytest

from voxserve.errors import Overloaded
from voxserve.server.admission import Admission


async def test_cap_queue_and_refusal() -> None:
    seen: list[tuple[int, int]] = []
    adm = Admission(max_streams=2, max_queue=1, on_change=lambda a, q: seen.append((a, q)))
    await adm.acquire()
    await adm.acquire()
    waiter = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    assert (adm.active, adm.queued) == (2, 1)
    with pytest.raises(Overloaded) as info:
        await adm.acquire()
    assert info.value.retry_after_s is not None
    adm.release()  # hands the slot to the waiter
    await asyncio.wait_for(waiter, 1)
    assert (adm.active, adm.queued) == (2, 0)
    adm.release()
    adm.release()
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
    await adm.acquire()
    waiter = asyncio.create_task(adm.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert adm.queued == 0
    adm.release()
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
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    state = ServerState.build(settings, runtime=BlockedLoadRuntime())
    assert state.admission.queue_timeout_s == 2.5
