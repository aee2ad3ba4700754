"""Three Kokoro listeners over HTTP on the real model (issue 15): each one the server admits gets its
whole reply, never waiting more than a moment, and each it cannot feed is refused with a 503 at capacity.

The callers arrive half a second apart, each while the earlier ones play their first sentence, and ask
for the issue's three-sentence reply as a server-sent event stream; the ``speech.audio.done`` event
carries the server's own count of the seconds the listener waited (playing from the first audio in real
time). How many of the three a machine carries depends on its cores and their speed: admission decides
that from the costs it learned here, and ``voxserve bench`` measures it.

Issue 15's target is that an admitted listener never waits at all. On two cores this burst sits at the
edge of capacity, and in some rounds one admitted listener still waits a moment, most often in the state
CI meets (a server that learned only from lone requests): ``bench.listener_rounds --fresh --warm 6``
measures how often and how long, and docs/benchmarks.md keeps the numbers ("A first audio refused ...
(stop 64)"). That is a rate for the benchmark, not a test that passes by chance. What holds every time,
and is asserted here: a wait stays short (:data:`WAIT_BOUND_S`: a scheduler that let a later stream take
an earlier one's cores would make it wait seconds), and every wait is counted in /metrics.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from bench.arrival_trace import REPLY

from voxserve.server.runtime_api import RuntimeLike

from .support import KOKORO, RunningServer, SharedRuntime, server_settings

pytestmark = pytest.mark.alone  # real-time listeners: the cores must be the test's own

LISTENERS = 3
GAP_S = 0.5
WAIT_BOUND_S = 1.0  # twice the longest wait measured in this burst (docs/benchmarks.md), below seconds


async def _listen(client: httpx.AsyncClient, url: str, delay: float) -> tuple[int, dict[str, object]]:
    """One caller after ``delay`` s: (status, the done event or the error body and Retry-After)."""
    await asyncio.sleep(delay)
    body = {"input": REPLY, "voice": KOKORO, "response_format": "pcm", "stream_format": "sse"}
    async with client.stream("POST", url, json=body, timeout=60) as response:
        if response.status_code != 200:
            error = json.loads(await response.aread())
            return response.status_code, {"error": error, "retry_after": response.headers.get("retry-after")}
        done: dict[str, object] = {}
        async for line in response.aiter_lines():
            if line.startswith("data: ") and "speech.audio.done" in line:
                done = json.loads(line[6:])
        return response.status_code, done


async def test_admitted_kokoro_listeners_wait_at_most_a_moment_and_the_rest_are_refused_at_capacity(
    shared_runtime: RuntimeLike,
) -> None:
    running = RunningServer(server_settings(default_voice=KOKORO), SharedRuntime(shared_runtime))
    try:
        stalled_before = _stalled(running)
        url = running.base + "/v1/audio/speech"
        async with httpx.AsyncClient() as client:
            answers = await asyncio.gather(*(_listen(client, url, n * GAP_S) for n in range(LISTENERS)))
        served = [done for status, done in answers if status == 200]
        refused = [(status, done) for status, done in answers if status != 200]
        assert answers[0][0] == 200, answers[0]  # the first caller finds the server idle: always admitted
        waits = [done["stall_s"] for done in served]
        for done in served:
            assert done.get("type") == "speech.audio.done", done  # the whole reply came
        assert all(isinstance(wait, float | int) and wait < WAIT_BOUND_S for wait in waits), answers
        for status, error in refused:
            assert status == 503 and error["retry_after"], error
            assert "at capacity" in json.dumps(error["error"])  # refused at once (no queue by default)
        waited = sum(isinstance(wait, float | int) and wait > 0 for wait in waits)
        assert _stalled(running) == stalled_before + waited  # every wait is counted
    finally:
        running.stop()


def _stalled(running: RunningServer) -> float:
    """Kokoro streams over HTTP the server counted as stalled so far (0 before its first)."""
    for line in httpx.get(running.base + "/metrics").text.splitlines():
        if line.startswith('voxserve_stalled_streams_total{engine="kokoro",transport="http"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
