"""The simulator's closed loop: a listener asks again once its reply has played, a refused one after a pause."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from bench import simulate_cores
from voxserve.benchmark.records import RequestRecord, record_from_arrivals


def _fake_listener(refuse: bool) -> Any:
    """A stand-in for one request: 20 ms to first audio, 50 ms of audio; or a refusal at once."""

    async def listener(
        runtime: object, voice: str, delay: float, concurrency: int, admission: object, *, since: float
    ) -> RequestRecord:
        if refuse:
            return record_from_arrivals(
                [], transport="t", voice=voice, chars=1, started_s=since, error="full", failed_after_s=0.0
            )
        await asyncio.sleep(0.02)
        return record_from_arrivals([(0.02, 0.05)], transport="t", voice=voice, chars=1, started_s=since)

    return listener


def test_a_listener_asks_again_once_its_reply_has_played(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulate_cores, "listener", _fake_listener(refuse=False))
    records: list[RequestRecord] = asyncio.run(simulate_cores._asks_again(None, "v", 0.01, 1, None, 0.5))  # type: ignore[arg-type]
    assert 3 <= len(records) <= 7  # each reply plays for 0.07 s from its request: at most 7 in 0.49 s
    assert records[0].started_s >= 0.01
    for before, after in itertools.pairwise(records):
        assert after.started_s >= before.started_s + before.played_s - 1e-3
        assert after.started_s < before.started_s + before.played_s + 0.05
    assert records[-1].started_s < 0.5


def test_a_refused_listener_pauses_before_asking_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simulate_cores, "FAILED_PAUSE_S", 0.2)
    monkeypatch.setattr(simulate_cores, "listener", _fake_listener(refuse=True))
    records = asyncio.run(simulate_cores._asks_again(None, "v", 0.0, 1, None, 0.5))  # type: ignore[arg-type]
    assert 2 <= len(records) <= 3  # at 0, 0.2 and 0.4 s, give or take the machine's timers
    assert not any(r.ok for r in records)
    assert all(after.started_s - before.started_s >= 0.2 - 1e-3 for before, after in itertools.pairwise(records))
