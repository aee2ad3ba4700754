"""Listeners on the real models, in one process (issue 15): callers who arrive one after another while
earlier ones play must not make those run dry. Each listener plays its stream from the first audio in
real time, by the rule the server counts stalls with (:class:`~voxserve.stream.playback.PlaybackClock`);
the reply is ``bench/arrival_trace``'s, the issue's three sentences.

Piper is the engine here because the machine can carry several of its listeners whatever its speed:
one takes a few hundredths of the cores even on a slow 2-core machine, so the load stays well inside
the capacity admission would allow, and any stall is the scheduler's. (How many Kokoro listeners a
machine carries depends on it: ``bench/compare_trees`` and ``voxserve bench`` measure that.)
"""

from __future__ import annotations

import asyncio

import pytest
from bench.arrival_trace import listen

from voxserve.runtime import Runtime

pytestmark = pytest.mark.alone  # listeners play in real time and must not stall

VOICE = "en_US-joe-medium"
LISTENERS = 4
GAP_S = 0.25  # callers arrive while the earlier ones are in their first window or just past it


async def test_listeners_arriving_while_others_play_never_run_dry(runtime: Runtime) -> None:
    share = runtime.stream_share(runtime.engine_for(VOICE).name)
    assert share is not None, "the start learned no window cost for Piper"
    # the premise: these listeners together keep under half of the cores busy
    assert share * LISTENERS < 0.5, f"one Piper stream takes {share:.3f} of this machine"
    clocks = await asyncio.gather(*(listen(runtime, VOICE, n * GAP_S) for n in range(LISTENERS)))
    for clock in clocks:
        assert clock.audio_s > 6.0  # the whole reply came
    assert [(s.at_s, round(s.wait_s, 3)) for c in clocks for s in c.stalls] == []
