"""voxserve.client (async and blocking) against a real server over loopback, on the fake engines."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from websockets.sync.client import connect

from voxserve.client import AsyncClient, Client, VoxServeError
from voxserve.runtime import Runtime
from voxserve.server.runtime_api import RuntimeLike

from .audio_util import pcm_rms
from .support import PIPER, SHORT, RunningServer, ServerMaker
from .test_ws import recv_json, send
from .test_ws_contexts import LONG


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


def test_the_client_imports_nothing_of_the_server() -> None:
    code = (
        "import sys, voxserve.client; "
        "print([m for m in sys.modules if m.startswith('voxserve.') and not m.startswith('voxserve.client')"
        " or m in ('fastapi', 'onnxruntime', 'grpc')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


async def test_async_synthesize_stream_and_contexts(server: RunningServer) -> None:
    async with AsyncClient(server.base) as client:
        assert PIPER in {v.id for v in await client.voices()}
        speech = await client.synthesize(SHORT, voice=PIPER, format="pcm", sample_rate=16000, word_timings=True)
        assert speech.sample_rate == 16000 and pcm_rms(speech.audio) > 0.01
        assert [w.word for w in speech.words][:2] == ["Hello", "there"]
        frames = [f async for f in client.stream(SHORT, voice=PIPER, format="pcm")]
        assert frames[-1].final and not any(f.final for f in frames[:-1])
        assert abs(sum(f.duration_s for f in frames) - len(b"".join(f.audio for f in frames)) / 2 / 24000) < 1e-6

        async with client.connect(voice=PIPER, format="pcm", word_timings=True) as conn:
            assert conn.sample_rate == 22050
            a, b = conn.context(), conn.context()
            await a.push_text(LONG)
            await a.flush()
            heard = [frame async for frame in _first(a)]
            await a.cancel()
            for fragment in ("Of course, ", "right away."):
                await b.push_text(fragment)
            await b.end_input()
            b_frames = [frame async for frame in b]
            a_rest = [frame async for frame in a]
            assert b.done is not None and not b.done.cancelled and b.done.chunks == len(b_frames)
            assert a.done is not None and a.done.cancelled and a.done.chunks == len(heard) + len(a_rest)
            assert b_frames[-1].final and {f.context_id for f in b_frames} == {b.id}
            assert "away" in [w.word for f in b_frames for w in f.words]
            assert pcm_rms(b"".join(f.audio for f in b_frames)) > 0.01


async def _first(ctx: Any) -> Any:
    async for frame in ctx:
        yield frame
        return


def test_blocking_client(server: RunningServer) -> None:
    with Client(server.base) as client:
        speech = client.synthesize(SHORT, voice=PIPER, format="wav")
        assert speech.audio[:4] == b"RIFF" and speech.sample_rate == 22050
        with client.connect(voice=PIPER) as conn:
            ctx = conn.context("turn-1")
            ctx.push_text("Blocking calls work too.")
            ctx.end_input()
            frames = list(ctx)
            assert ctx.done is not None and ctx.done.chunks == len(frames) > 0 and frames[-1].final


def test_errors_are_typed(server: RunningServer) -> None:
    async def run() -> None:
        async with AsyncClient(server.base, retries=0) as client:
            with pytest.raises(VoxServeError) as info:
                await client.synthesize(SHORT, voice="nobody")
            assert info.value.code == "unknown_voice" and info.value.status == 400 and not info.value.retryable

    asyncio.run(run())


def test_a_server_out_of_reach_or_too_slow_is_a_typed_error_too(server: RunningServer) -> None:
    """A client that catches :class:`VoxServeError` also catches a server that is down (retryable: it may
    be restarting) and one that does not answer within the client's timeout, on HTTP and WebSocket."""
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}"

    async def run() -> None:
        async with AsyncClient(down, retries=0) as client:
            for attempt in (client.voices, lambda: client.synthesize(SHORT)):
                with pytest.raises(VoxServeError) as info:
                    await attempt()
                assert info.value.code == "unavailable" and info.value.retryable, info.value
            with pytest.raises(VoxServeError, match="unavailable"):
                async with client.connect():
                    pass
        async with AsyncClient(server.base, retries=0, timeout_s=0.001) as client:
            with pytest.raises(VoxServeError) as info:
                await client.synthesize(LONG, voice=PIPER)
            assert info.value.code == "timeout" and not info.value.retryable

    asyncio.run(run())
    with Client(down, retries=0) as blocking, pytest.raises(VoxServeError, match="unavailable"):
        blocking.voices()


def test_a_websocket_server_that_stops_answering_is_a_timeout_not_a_hang() -> None:
    """A server that accepts the socket but never says ``ready``, or says it and then sends nothing after
    the input has ended, fails the client's wait with ``timeout`` within ``timeout_s``. (A stand-in
    server: voxserve itself always answers; this is the failure a hung or partitioned one would show.)"""
    from websockets.asyncio.server import ServerConnection, serve

    async def silent(ws: ServerConnection) -> None:
        await ws.recv()  # the config
        await ws.wait_closed()

    async def ready_then_silent(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send('{"type": "ready", "session_id": "s", "sample_rate": 24000, "format": "pcm"}')
        await ws.wait_closed()

    async def run() -> None:
        for handler, stage in ((silent, "ready"), (ready_then_silent, "context")):
            async with serve(handler, "127.0.0.1", 0) as listening:
                port = listening.sockets[0].getsockname()[1]
                async with AsyncClient(f"http://127.0.0.1:{port}", retries=0, timeout_s=0.3) as client:
                    started = time.monotonic()
                    with pytest.raises(VoxServeError) as info:
                        async with client.connect() as conn:
                            ctx = conn.context("c1")
                            await ctx.push_text("Hello.")
                            await ctx.end_input()
                            async for _ in ctx:
                                pass
                    assert info.value.code == "timeout" and stage in str(info.value), info.value
                    assert time.monotonic() - started < 5

    asyncio.run(run())


def test_a_context_the_server_closed_for_idleness_takes_no_more_text_from_its_expiry_on() -> None:
    """``Context.finished`` turns true at the server's ``context_expired``, not only at the ``done`` that
    follows the context's last audio: text sent in between would be refused and lost. (A stand-in
    server that expires the context and then holds its done back.)"""
    from websockets.asyncio.server import ServerConnection, serve

    async def expires(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.send('{"type": "ready", "session_id": "s", "sample_rate": 24000, "format": "pcm"}')
        await ws.recv()  # the first text
        await ws.send('{"type": "error", "code": "context_expired", "message": "idle", "context_id": "c1"}')
        await ws.wait_closed()

    async def run() -> None:
        async with serve(expires, "127.0.0.1", 0) as listening:
            port = listening.sockets[0].getsockname()[1]
            client = AsyncClient(f"http://127.0.0.1:{port}", retries=0)
            async with client, client.connect() as conn:
                ctx = conn.context("c1")
                await ctx.push_text("Hello.")
                for _ in range(100):
                    if ctx.finished:
                        break
                    await asyncio.sleep(0.02)
                assert ctx.finished and ctx.done is None

    asyncio.run(run())


def test_retries_a_busy_server_after_retry_after(make_server: ServerMaker) -> None:
    """With the only stream slot taken, the first try gets 503 + Retry-After; the client waits, tries again
    once the slot is free, and succeeds."""
    busy = make_server(max_streams=1, max_queue=0)
    with connect(busy.ws) as ws:
        send(ws, type="config", voice=PIPER)
        recv_json(ws)
        send(ws, type="text", text=LONG)
        send(ws, type="flush")
        assert recv_json(ws)["type"] == "chunk"  # the slot is held

        def free_the_slot() -> None:
            time.sleep(0.5)
            send(ws, type="cancel")

        releaser = threading.Thread(target=free_the_slot)
        releaser.start()
        started = time.monotonic()
        with Client(busy.base, retries=3) as client:
            speech = client.synthesize("Now it is my turn.", voice=PIPER)
        releaser.join()
        assert pcm_rms(speech.audio) > 0.01
        assert time.monotonic() - started >= 1.0  # it waited the Retry-After second at least once
        while recv_json(ws)["type"] != "done":  # read what was sent, so the socket closes at once
            pass
    refused = [line for line in _metrics(busy) if "voxserve_requests_total{" in line and '"503"' in line]
    assert refused, "the first try was not refused"


def _metrics(server: RunningServer) -> list[str]:
    import httpx

    return httpx.get(server.base + "/metrics").text.splitlines()


def test_source_words_give_each_span_once_with_its_punctuation_across_chunks() -> None:
    """The words read for one piece of text ("$5.50") may come in different chunks: the span is given
    once, with the punctuation around it, so the pieces put together give the text back as sent."""
    from voxserve.client.types import SourceWords, WordTiming

    text = 'Sure. The total is $5.50, "due" Friday.'
    spans = {"Sure": (0, 4), "The": (6, 9), "total": (10, 15), "is": (16, 18), "money": (19, 24)}
    spans |= {"due": (27, 30), "Friday": (32, 38)}
    spoken = ["Sure", "The", "total", "is", "money", "money", "money"], ["money", "money", "due", "Friday"]
    words = SourceWords()
    given = []
    for chunk in spoken:  # two chunks: "$5.50" is read as five words, split between them
        given += [text for _, text in words([WordTiming(w, 0.0, 0.1, *spans[w]) for w in chunk], text)]
    assert given == ["Sure.", "The", "total", "is", "$5.50,", '"due"', "Friday."]
    assert " ".join(given) == text
    assert words([WordTiming("eh", 0.0, 0.1)], text) == [(WordTiming("eh", 0.0, 0.1), "eh")]  # no span: as spoken
