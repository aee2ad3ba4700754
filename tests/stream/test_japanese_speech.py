"""Japanese through the real Kokoro voice, heard by the multilingual Whisper base model."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.evaluation.asr import cer, load_whisper, transcribe
from voxserve.runtime import Runtime
from voxserve.types import SynthesisParams

# Everyday sentences without digits (Whisper writes numbers as digits); none is in bench.lang_cer.
SENTENCES = [
    "明日の朝は早く起きます。",
    "午後から雨が降るかもしれません。",
    "駅までバスで行きましょう。",
    "このお店のケーキはとてもおいしい。",
    "図書館は月曜日が休みです。",
]


@pytest.mark.e2e
async def test_japanese_is_understood(runtime: Runtime) -> None:
    whisper = load_whisper("base")
    scores = []
    for text in SENTENCES:
        session = runtime.open_session(SynthesisParams(voice="jf_alpha"), pace=False)
        session.push_text(text)
        session.close()
        audio = np.concatenate([chunk.samples async for chunk in session])
        heard = transcribe(whisper, audio, session.sample_rate, "ja")
        scores.append((cer(text, heard, "ja"), text, heard))
    mean = sum(score for score, _, _ in scores) / len(scores)
    assert mean <= 0.1, scores
