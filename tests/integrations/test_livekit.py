"""voxserve.integrations.livekit and LiveKit's own OpenAI TTS, driven through LiveKit Agents' TTS interface
(no LiveKit server) against a real voxserve server over loopback."""

from __future__ import annotations

from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT
from livekit.plugins import openai as lk_openai

from voxserve.integrations.livekit import TTS

from .conftest import PIPER, pcm_rms


async def test_streaming_input_gives_audio_and_aligned_transcripts(base_url: str) -> None:
    async with TTS(base_url=base_url, voice=PIPER, sample_rate=16000) as engine:
        assert engine.capabilities.streaming and engine.capabilities.aligned_transcript
        async with engine.stream() as stream:
            for piece in ("Hello there, ", "how can I ", "help you today? It costs $", "5."):
                stream.push_text(piece)
            stream.end_input()
            events = [event async for event in stream]
    frames = [event.frame for event in events]
    assert {(f.sample_rate, f.num_channels) for f in frames} == {(16000, 1)}
    assert events[-1].is_final and not any(e.is_final for e in events[:-1])
    audio = b"".join(bytes(f.data) for f in frames)
    assert 2.0 < len(audio) / 2 / 16000 < 8.0 and pcm_rms(audio) > 0.01
    words = [w for f in frames for w in f.userdata.get(USERDATA_TIMED_TRANSCRIPT, [])]
    assert [str(w).strip() for w in words][:3] == ["Hello", "there", "how"]
    transcript = "".join(words)
    assert "today" in transcript and "$5" in transcript and "dollars" not in transcript  # the text as sent
    starts = [w.start_time for w in words]
    assert starts == sorted(starts) and all(w.end_time > w.start_time for w in words)


async def test_a_closed_stream_stops_alone_and_the_socket_is_kept(base_url: str) -> None:
    async with TTS(base_url=base_url, voice=PIPER) as engine:
        interrupted = engine.stream()
        interrupted.push_text("This answer is long and will be cut off by the user before it ends, ")
        interrupted.push_text("so only its first words are ever heard.")
        interrupted.flush()
        first = await interrupted.__anext__()
        assert first.frame.sample_rate == 24000
        socket = await engine.connection()
        await interrupted.aclose()  # barge-in
        frame = await engine.synthesize("Sure, what else?").collect()
        assert await engine.connection() is socket  # the same WebSocket, no reconnect
        assert 0.5 < frame.duration < 4.0 and pcm_rms(bytes(frame.data)) > 0.01


async def test_stock_openai_tts_with_only_base_url_changed(base_url: str) -> None:
    """LiveKit's OpenAI plugin asks for SSE (gpt-4o-mini-tts) in mp3 by default; pcm too."""
    for extra in ({}, {"response_format": "pcm"}):
        engine = lk_openai.TTS(base_url=f"{base_url}/v1", api_key="unused", **extra)
        try:
            frame = await engine.synthesize("Hello from the stock plugin.").collect()
        finally:
            await engine.aclose()
        assert frame.sample_rate == 24000
        assert 1.0 < frame.duration < 5.0 and pcm_rms(bytes(frame.data)) > 0.01, extra
