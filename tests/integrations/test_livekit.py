"""voxserve.integrations.livekit and LiveKit's own OpenAI TTS, driven through LiveKit Agents' TTS interface
(no LiveKit server) against a real voxserve server over loopback."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Sequence

import pytest
from livekit.agents import APIConnectionError, APIConnectOptions, APIStatusError, APITimeoutError
from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT
from livekit.plugins import openai as lk_openai

from voxserve.client import VoxServeError
from voxserve.integrations.livekit import TTS, _api_error

from .conftest import PIPER, pcm_rms


async def transcript_of(engine: TTS, pieces: Sequence[str | float]) -> tuple[str, float]:
    """Stream ``pieces`` (text, or seconds to pause) as one segment; the aligned transcript and seconds of audio."""
    async with engine.stream() as stream:
        for piece in pieces:
            if isinstance(piece, float):
                await asyncio.sleep(piece)
            else:
                stream.push_text(piece)
        stream.end_input()
        frames = [event.frame async for event in stream]
    words = [w for f in frames for w in f.userdata.get(USERDATA_TIMED_TRANSCRIPT, [])]
    return "".join(words), sum(f.duration for f in frames)


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
    assert [str(w).strip() for w in words][:3] == ["Hello", "there,", "how"]  # with its punctuation as sent
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


async def test_a_word_read_as_many_is_shown_once_and_nothing_to_speak_is_silence(base_url: str) -> None:
    """ "$5.50" is read as five words, which may come in different chunks: the transcript shows "$5.50,"
    once. A segment of only punctuation or emoji is a moment of silence, not an error ending the session;
    one of only spaces is nothing."""
    async with TTS(base_url=base_url, voice=PIPER) as engine:
        transcript, _ = await transcript_of(engine, ["Sure. The total is $5.50, ", "due on Friday."])
        assert transcript.split() == ["Sure.", "The", "total", "is", "$5.50,", "due", "on", "Friday."]
        for nothing in (["..."], ["👍"], ["  "]):
            transcript, seconds = await transcript_of(engine, nothing)
            assert transcript == "" and seconds < 0.1, nothing


async def test_a_pause_longer_than_the_servers_context_idle_loses_no_text(tight_url: str) -> None:
    """The server closes a context that gets no text for a second; the words after the pause go on in a
    new one, in the same segment, their times after the audio before them."""
    async with TTS(base_url=tight_url, voice=PIPER) as engine:
        transcript, seconds = await transcript_of(
            engine, ["Let me look that up for you, ", 2.5, "the answer is forty two."]
        )
    assert transcript.split()[-4:] == ["answer", "is", "forty", "two."], transcript
    assert seconds > 2.0


def test_failures_come_out_as_livekits_errors_retryable_where_trying_again_helps() -> None:
    lost = _api_error(VoxServeError("closed", "connection lost", status=1006))
    assert isinstance(lost, APIConnectionError) and lost.retryable
    assert isinstance(_api_error(VoxServeError("unavailable", "refused")), APIConnectionError)
    assert isinstance(_api_error(VoxServeError("timeout", "no answer")), APITimeoutError)
    for error, status, retryable in [
        (VoxServeError("unauthorized", "invalid API key"), 401, False),
        (VoxServeError("closed", "", status=4001), 401, False),
        (VoxServeError("overloaded", "full", retry_after_s=1.0), 503, True),
        (VoxServeError("closed", "full", status=1013), 503, True),
        (VoxServeError("unknown_voice", "no such voice", status=400), 400, False),
    ]:
        mapped = _api_error(error)
        assert isinstance(mapped, APIStatusError), error
        assert (mapped.status_code, mapped.retryable) == (status, retryable), error


async def seconds_to_fail(engine: TTS, timeout_s: float, error: type[Exception]) -> float:
    """How long a one-sentence stream with ``max_retry=0`` and ``timeout_s`` takes to raise ``error``."""
    started = time.monotonic()
    with pytest.raises(error):
        async with engine.stream(conn_options=APIConnectOptions(max_retry=0, timeout=timeout_s)) as stream:
            stream.push_text("Hello there.")
            stream.end_input()
            async for _ in stream:
                pass
    return time.monotonic() - started


async def test_a_server_out_of_reach_fails_within_livekits_own_options() -> None:
    """LiveKit owns the retries: with ``max_retry=0`` a server that is down fails at once, as a
    connection error (the client's own retries would have added seconds)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"
    async with TTS(base_url=down, voice=PIPER) as engine:
        assert await seconds_to_fail(engine, 2.0, APIConnectionError) < 2.0


async def test_a_server_that_stops_answering_times_out_within_the_streams_own_timeout() -> None:
    """A stand-in server that says ready, then nothing (hung, or cut off by the network): the stream fails
    with LiveKit's retryable timeout within its options' ``timeout``, even on a socket opened before."""
    from websockets.asyncio.server import ServerConnection, serve

    async def hung(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send('{"type": "ready", "session_id": "s", "sample_rate": 24000, "format": "pcm"}')
        await ws.wait_closed()

    async with serve(hung, "127.0.0.1", 0) as listening:
        base = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
        async with TTS(base_url=base, voice=PIPER) as engine:
            await engine.connection()  # opened with the default options, as in a running session
            assert await seconds_to_fail(engine, 1.0, APITimeoutError) < 4.0
