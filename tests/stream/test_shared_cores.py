"""Concurrent streams on the default runtime share the cores: alone a stream decodes on all of them,
side by side each takes one (elastic ONNX sessions; see voxserve.stream.pool)."""

from __future__ import annotations

import asyncio
import os

from voxserve.runtime import Runtime

from .speaking import speak

TEXTS = (
    "Sure, I can help with that. Your order shipped this morning and should arrive on Thursday.",
    "Please call me back tomorrow afternoon. The meeting has been moved to the second floor.",
)


async def test_two_streams_decode_side_by_side_on_a_core_each(runtime: Runtime, transcribe, wer) -> None:  # type: ignore[no-untyped-def]
    cores = os.cpu_count() or 1
    assert cores >= 2, "this test needs a machine with at least 2 cores (CI has 2)"
    assert runtime.pool.cores == cores and runtime.pool.workers == 2 * cores  # a spare per core: see pool
    cost = runtime.engine_for("af_heart").window_cost
    assert cost is not None
    narrow_before, wide_before = cost.recorded(1), cost.recorded(cores)

    alone = await speak(runtime, TEXTS[0])
    assert cost.recorded(1) == narrow_before and cost.recorded(cores) > wide_before  # alone: every core

    wide_before = cost.recorded(cores)
    audios = await asyncio.gather(*(speak(runtime, text) for text in TEXTS))
    assert cost.recorded(1) > narrow_before  # together: a core each
    for text, audio in zip(TEXTS, audios, strict=True):
        assert wer(text, transcribe(audio, 24_000)) <= 0.15
    # the same sentence sounds the same whichever share of the cores decoded it: the same length within a
    # few frames (other window cuts move a clause pause's trim; a lost or doubled window is 0.4 s or more)
    assert abs(len(audios[0]) - len(alone)) <= 0.1 * 24_000
