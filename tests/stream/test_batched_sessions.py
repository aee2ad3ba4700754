"""Concurrent sessions on a runtime that batches decoder windows across streams (the GPU setup, on CPU)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.tuning import Tuning

from .speaking import speak

if TYPE_CHECKING:
    from tests.conftest import Transcriber, WordErrorRate

TEXTS = (
    "Sure, I can help with that. Your order shipped this morning and should arrive on Thursday.",
    "Please call me back tomorrow afternoon. The meeting has been moved to the second floor.",
)


@pytest.fixture(scope="module")
def batching_runtime(model_store: object) -> Iterator[Runtime]:
    settings = Settings(_env_file=None, engines=["kokoro"], decode_batch=4)
    runtime = Runtime(settings, Tuning(decode_batch_wait_ms=100))
    runtime.load(warm=True)
    yield runtime
    runtime.close()


async def test_concurrent_streams_are_batched_and_stay_intelligible(
    batching_runtime: Runtime, transcribe: Transcriber, wer: WordErrorRate
) -> None:
    calls_before, windows_before = batching_runtime.decoder_calls
    audios = await asyncio.gather(*(speak(batching_runtime, text) for text in TEXTS))
    calls, windows = batching_runtime.decoder_calls
    calls, windows = calls - calls_before, windows - windows_before
    assert calls < windows, f"{calls} decoder calls for {windows} windows"  # some calls held both streams' windows
    for text, audio in zip(TEXTS, audios, strict=True):
        assert 4.0 < len(audio) / 24_000 < 9.0
        heard = transcribe(audio, 24_000)
        assert wer(text, heard) <= 0.10, heard
