"""Concurrent streams on the default runtime share the cores: alone a stream decodes on all of them,
side by side each takes one (elastic ONNX sessions; see voxserve.stream.pool). With the real models
(is the speech still right?) and on the fake engine (which thread counts, in the unit tier)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import numpy as np
import pytest

from voxserve.engines.cpus import usable_cores
from voxserve.engines.fake import FakeEngine
from voxserve.runtime import Runtime

from .speaking import speak

pytestmark = pytest.mark.alone  # two streams must each get a core

if TYPE_CHECKING:
    from tests.conftest import Transcriber, WordErrorRate

TEXTS = (
    "Sure, I can help with that. Your order shipped this morning and should arrive on Thursday.",
    "Please call me back tomorrow afternoon. The meeting has been moved to the second floor.",
)


async def test_two_streams_decode_side_by_side_on_a_core_each(
    runtime: Runtime, transcribe: Transcriber, wer: WordErrorRate
) -> None:
    cores = usable_cores()
    assert cores >= 2, "this test needs a machine with at least 2 cores (CI has 2)"
    assert runtime.pool.cores == cores and runtime.pool.workers == 2 * cores  # a spare per core: see pool
    cost = runtime.engine_for("af_heart").window_cost
    assert cost is not None
    narrow_before, wide_before = cost.recorded(1), cost.recorded(cores)

    alone = await speak(runtime, TEXTS[0])
    assert cost.recorded(cores) > wide_before  # alone: every core while it has little audio ahead
    narrow_before = cost.recorded(1)  # (and one once it is ahead: CoreSharing._enough)

    wide_before = cost.recorded(cores)
    audios = await asyncio.gather(*(speak(runtime, text) for text in TEXTS))
    assert cost.recorded(1) > narrow_before  # together: a core each
    for text, audio in zip(TEXTS, audios, strict=True):
        assert wer(text, transcribe(audio, 24_000)) <= 0.15
    # the same sentence sounds the same whichever share of the cores decoded it: as much speech within a
    # few frames (a lost or doubled window is 0.4 s or more). Speech, not length: where the last window of
    # a segment is cut moved how much of the model's own pause the join kept (0.13 s seen on CI; stream/pauses.py)
    assert abs(_speech_s(audios[0]) - _speech_s(alone)) <= 0.1


def _speech_s(audio: np.ndarray) -> float:
    """Seconds of 20 ms frames louder than a tenth of the loudest one's RMS (24 kHz audio)."""
    frames = audio[: len(audio) // 480 * 480].reshape(-1, 480).astype(np.float64)
    rms = np.sqrt(np.mean(frames**2, axis=1))
    return float(np.count_nonzero(rms > 0.1 * rms.max()) * 0.02)


async def test_the_pool_gives_a_lone_stream_every_core_and_two_streams_one_each(fake_runtime: Runtime) -> None:
    """The same sharing on the fake engine, whose windows cost as long as a tenth of their audio: the
    thread counts the windows were decoded at, and the same audio whichever share decoded it."""
    runtime = fake_runtime
    cores = runtime.pool.cores
    assert cores is not None and cores >= 2, "this test needs a machine with at least 2 cores (CI has 2)"
    engine = runtime.engines["kokoro"]
    assert isinstance(engine, FakeEngine)
    cost = engine.window_cost
    engine.audio_s = 0.1  # windows long enough for two streams' windows to overlap
    try:
        narrow_before, wide_before = cost.recorded(1), cost.recorded(cores)
        alone = await speak(runtime, TEXTS[0])
        assert cost.recorded(cores) > wide_before  # alone: every core while it has little audio ahead
        narrow_before = cost.recorded(1)  # (and one once it is ahead: CoreSharing._enough)
        together = await asyncio.gather(*(speak(runtime, text) for text in TEXTS))
        assert cost.recorded(1) > narrow_before  # together: a core each
    finally:
        engine.audio_s = FakeEngine().audio_s
    # the same audio whichever share decoded it (the level may differ a little: a segment's loudness is
    # evened from the pieces it came in)
    assert len(together[0]) == len(alone)
    assert float(np.sqrt(np.mean((together[0] - alone) ** 2))) < 0.05 * float(np.sqrt(np.mean(alone**2)))
