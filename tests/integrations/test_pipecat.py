"""voxserve.integrations.pipecat and Pipecat's own OpenAI TTS, driven through Pipecat's frame pipeline
(pipecat.tests.utils.run_test) against a real voxserve server over loopback."""

from __future__ import annotations

from pipecat.frames.frames import (
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.pipeline.worker import PipelineParams
from pipecat.services.openai.tts import OpenAITTSService
from pipecat.tests.utils import SleepFrame, run_test

from voxserve.integrations.pipecat import VoxServeTTSService

from .conftest import PIPER, pcm_rms

PARAMS = PipelineParams(audio_out_sample_rate=16000)


def audio_of(frames: list[object], context_id: str | None = None) -> bytes:
    return b"".join(f.audio for f in frames if isinstance(f, TTSAudioRawFrame) and context_id in (None, f.context_id))


async def test_speaks_with_word_timestamps(base_url: str) -> None:
    tts = VoxServeTTSService(base_url=base_url, voice=PIPER)
    down, _ = await run_test(
        tts, frames_to_send=[TTSSpeakFrame("Hello there, it costs $5 today.")], pipeline_params=PARAMS
    )
    audio = audio_of(down)
    assert {f.sample_rate for f in down if isinstance(f, TTSAudioRawFrame)} == {16000}
    assert 1.0 < len(audio) / 2 / 16000 < 6.0 and pcm_rms(audio) > 0.01
    words = [f.text.strip() for f in down if isinstance(f, TTSTextFrame)]
    assert words[:3] == ["Hello", "there,", "how"] or words[:2] == ["Hello", "there"], words
    assert "$5" in words and "dollars" not in words  # word frames show the text as sent
    assert any(isinstance(f, TTSStoppedFrame) for f in down)


async def test_interruption_cancels_one_context_and_keeps_the_socket(base_url: str) -> None:
    tts = VoxServeTTSService(base_url=base_url, voice=PIPER)
    connections: list[object] = []

    @tts.event_handler("on_connected")
    async def connected(service: object) -> None:
        connections.append(service)

    long_answer = (
        "This first answer is long, and it goes on for several sentences. "
        "The user will interrupt it before it is over. Nobody hears this last part."
    )
    down, _ = await run_test(
        tts,
        frames_to_send=[
            LLMFullResponseStartFrame(),
            LLMTextFrame(long_answer),
            SleepFrame(1.0),
            InterruptionFrame(),
            SleepFrame(0.2),
            LLMFullResponseStartFrame(),
            LLMTextFrame("Sure, tell me more."),
            LLMFullResponseEndFrame(),
            SleepFrame(3.0),
        ],
        pipeline_params=PARAMS,
    )
    contexts = list(dict.fromkeys(f.context_id for f in down if isinstance(f, TTSAudioRawFrame)))
    assert len(contexts) == 2, contexts
    first, second = (audio_of(down, c) for c in contexts)
    assert len(first) / 2 / 16000 < 6.0  # cut short: the whole answer is ~8 s
    assert len(second) / 2 / 16000 > 0.5 and pcm_rms(second) > 0.01
    words = [f.text.strip() for f in down if isinstance(f, TTSTextFrame) and f.context_id == contexts[1]]
    assert "Sure," in words or "Sure" in words, words
    assert len(connections) == 1  # no reconnect on barge-in


async def test_stock_openai_tts_with_only_base_url_changed(base_url: str) -> None:
    tts = OpenAITTSService(api_key="unused", base_url=f"{base_url}/v1", voice="alloy", sample_rate=24000)
    down, _ = await run_test(
        tts,
        frames_to_send=[TTSSpeakFrame("Hello from the stock service.")],
        pipeline_params=PipelineParams(audio_out_sample_rate=24000),
    )
    audio = audio_of(down)
    assert 1.0 < len(audio) / 2 / 24000 < 5.0 and pcm_rms(audio) > 0.01
