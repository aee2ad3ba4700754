"""voxserve.integrations.pipecat and Pipecat's own OpenAI TTS, driven through Pipecat's frame pipeline
(pipecat.tests.utils.run_test) against a real voxserve server over loopback."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
from pipecat.frames.frames import (
    ErrorFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStoppedFrame,
    TTSTextFrame,
    TTSUpdateSettingsFrame,
)
from pipecat.pipeline.worker import PipelineParams
from pipecat.services.openai.tts import OpenAITTSService
from pipecat.services.settings import TTSSettings
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
    assert words[:3] == ["Hello", "there,", "it"], words  # each word with its punctuation as sent
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


def audio_seconds(base_url: str, voice: str) -> float:
    """The server's count of audio it made with ``voice`` (Prometheus), over every transport."""
    text = httpx.get(f"{base_url}/metrics").text
    pattern = rf'^voxserve_audio_seconds_total{{[^}}]*voice="{re.escape(voice)}"[^}}]*}} (\S+)$'
    return sum(float(value) for value in re.findall(pattern, text, re.MULTILINE))


async def test_a_voice_changed_mid_session_speaks_the_next_turn(base_url: str) -> None:
    """A context opened after ``TTSUpdateSettingsFrame`` carries the new voice (its own config): the
    socket opened with the old one is kept."""
    before = audio_seconds(base_url, "am_adam")
    tts = VoxServeTTSService(base_url=base_url, voice=PIPER)
    down, up = await run_test(
        tts,
        frames_to_send=[
            TTSSpeakFrame("First with the old voice."),
            SleepFrame(1.5),
            TTSUpdateSettingsFrame(delta=TTSSettings(voice="am_adam")),
            TTSSpeakFrame("Then with the new one."),
            SleepFrame(3.0),
        ],
        pipeline_params=PARAMS,
    )
    assert not [f for f in up + down if isinstance(f, ErrorFrame)], up
    assert audio_seconds(base_url, "am_adam") - before > 0.5


async def test_a_full_server_is_asked_again_and_the_turn_is_spoken(tight_url: str) -> None:
    """The server has room for one stream: the second agent's turn is refused as overloaded, sent again
    after the server's retry_after_s, and spoken in full, with no error frame."""

    async def agent(text: str, delay: float) -> list[object]:
        await asyncio.sleep(delay)
        tts = VoxServeTTSService(base_url=tight_url, voice=PIPER)
        down, up = await run_test(tts, frames_to_send=[TTSSpeakFrame(text), SleepFrame(6.0)], pipeline_params=PARAMS)
        return up + down

    first, second = await asyncio.gather(
        agent("This first answer takes a few seconds to say, so the server is busy with it.", 0.0),
        agent("And this one waits for its turn.", 0.3),
    )
    for frames in (first, second):  # without the second try, the second agent's turn is an error frame
        assert not [f for f in frames if isinstance(f, ErrorFrame)], [f for f in frames if isinstance(f, ErrorFrame)]
        assert len(audio_of(frames)) / 2 / 16000 > 1.0
    words = [f.text.strip() for f in second if isinstance(f, TTSTextFrame)]
    assert words[-3:] == ["for", "its", "turn."], words


async def test_a_pause_longer_than_the_servers_context_idle_loses_no_text(tight_url: str) -> None:
    """The server closes a context that gets no text for a second; the sentence after the pause is spoken
    in a new one, within the same Pipecat turn."""
    tts = VoxServeTTSService(base_url=tight_url, voice=PIPER)
    down, up = await run_test(
        tts,
        frames_to_send=[
            LLMFullResponseStartFrame(),
            LLMTextFrame("Let me look that up for you."),
            SleepFrame(2.5),
            LLMTextFrame(" The answer is forty two."),
            LLMFullResponseEndFrame(),
            SleepFrame(3.0),
        ],
        pipeline_params=PARAMS,
    )
    assert not [f for f in up + down if isinstance(f, ErrorFrame)], up
    contexts = {f.context_id for f in down if isinstance(f, TTSAudioRawFrame)}
    words = [f.text.strip() for f in down if isinstance(f, TTSTextFrame)]
    assert len(contexts) == 1 and words[-2:] == ["forty", "two."], (contexts, words)


async def test_a_refused_connection_gives_one_error_for_each_turn(base_url: str) -> None:
    """The server refuses the service's config (here an unknown voice; a wrong key goes the same way): the
    connection made at the start gives one error, and each turn of three sentences one more, not one or
    two for each sentence. Pipecat adds its own for each context that ended with no audio."""
    tts = VoxServeTTSService(base_url=base_url, voice="no_such_voice")
    turn = [LLMTextFrame("The first sentence."), LLMTextFrame(" The second one."), LLMTextFrame(" And the third.")]
    down, up = await run_test(
        tts,
        frames_to_send=[
            *(frame for _ in range(2) for frame in (LLMFullResponseStartFrame(), *turn, LLMFullResponseEndFrame())),
            SleepFrame(0.5),
        ],
        pipeline_params=PARAMS,
    )
    ours = [f.error for f in up + down if isinstance(f, ErrorFrame) and "no audio" not in f.error]
    assert len(ours) == 1 + 2 and all("unknown voice 'no_such_voice'" in error for error in ours), ours
    assert not audio_of(down)


async def test_text_that_comes_while_an_expired_context_ends_goes_to_a_new_one() -> None:
    """Between the server's ``context_expired`` and that context's ``done`` (its held text still being
    spoken), text sent to it would be refused and the turn lost: it waits for the done, then opens a new
    context. A stand-in server, which holds the done back for 0.5 s: with voxserve itself the gap is a
    moment, too short to hit on purpose."""
    from websockets.asyncio.server import ServerConnection, serve

    seen: list[tuple[str, str | None, str | None]] = []  # (type, context, text) as the server got them

    async def server(ws: ServerConnection) -> None:
        await ws.recv()  # the config
        await ws.send('{"type": "ready", "session_id": "s", "sample_rate": 16000, "format": "pcm"}')
        async for raw in ws:
            message = json.loads(raw)
            seen.append((message["type"], message.get("context_id"), message.get("text")))
            context = message.get("context_id")
            if len(seen) == 1:  # the turn's first text: its context expires at once
                expired = {"type": "error", "code": "context_expired", "message": "idle", "context_id": context}
                await ws.send(json.dumps(expired))
                await asyncio.sleep(0.5)
                await ws.send(json.dumps({"type": "done", "context_id": context, "audio_s": 0.0}))
                seen.append(("done sent", context, None))
            elif message["type"] == "close":
                await ws.send(json.dumps({"type": "done", "context_id": context, "audio_s": 0.0}))

    async with serve(server, "127.0.0.1", 0) as listening:
        port = listening.sockets[0].getsockname()[1]
        tts = VoxServeTTSService(base_url=f"http://127.0.0.1:{port}", voice=PIPER)
        await run_test(
            tts,
            frames_to_send=[
                LLMFullResponseStartFrame(),
                LLMTextFrame("Let me look that up for you."),
                LLMTextFrame(" The"),  # the first sentence goes once the next one has begun
                SleepFrame(0.2),
                LLMTextFrame(" answer is forty two."),
                LLMFullResponseEndFrame(),
                SleepFrame(1.0),
            ],
            pipeline_params=PARAMS,
        )
    first = seen[0][1]
    later = [(kind, context) for kind, context, text in seen if text and "forty two" in text]
    assert later and later[0][1] != first, seen  # not sent to the expired context
    assert seen.index(("done sent", first, None)) < [c for _, c, _ in seen].index(later[0][1]), seen
