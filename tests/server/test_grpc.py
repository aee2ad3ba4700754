"""gRPC transport end to end with a real grpcio client."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator

import grpc
import jwt
import pytest

from voxserve.runtime import Runtime
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc
from voxserve.server.runtime_api import RuntimeLike

from .audio_util import pcm_rms
from .support import KOKORO, PIPER, SHORT, RunningServer, ServerMaker


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


def stub(server: RunningServer) -> pb_grpc.VoxServeStub:
    return pb_grpc.VoxServeStub(grpc.insecure_channel(server.grpc))


def test_unary_and_server_streaming(server: RunningServer) -> None:
    client = stub(server)
    reply = client.Synthesize(
        pb.SynthesizeRequest(text=SHORT, voice=PIPER, format="pcm", word_timings=True), timeout=30
    )
    assert reply.sample_rate == 22050 and reply.format == "pcm"
    assert abs(len(reply.audio) / 2 / 22050 - reply.audio_s) < 0.01 and 1.5 < reply.audio_s < 4.5

    chunks = list(client.SynthesizeStream(pb.SynthesizeRequest(text=SHORT, voice=PIPER, sample_rate=16000), timeout=30))
    audio = b"".join(c.audio for c in chunks)
    assert len(chunks) > 1 and 1.5 < len(audio) / 2 / 16000 < 4.5  # Piper durations vary run to run
    assert pcm_rms(audio) > 0.01
    assert {v.id for v in client.ListVoices(pb.ListVoicesRequest(), timeout=5).voices} >= {PIPER, KOKORO}


def test_word_timings(server: RunningServer) -> None:
    reply = stub(server).Synthesize(pb.SynthesizeRequest(text=SHORT, voice=PIPER, word_timings=True), timeout=30)
    assert [w.word for w in reply.words][:2] == ["Hello", "there"]
    assert all(w.end_s > w.start_s for w in reply.words)


def test_errors_map_to_status_codes(server: RunningServer) -> None:
    client = stub(server)
    cases = [
        (pb.SynthesizeRequest(text=SHORT, voice="nobody"), grpc.StatusCode.INVALID_ARGUMENT),
        (pb.SynthesizeRequest(text=SHORT, voice=PIPER, speed=7), grpc.StatusCode.INVALID_ARGUMENT),
        (pb.SynthesizeRequest(text="", voice=PIPER), grpc.StatusCode.INVALID_ARGUMENT),
        (pb.SynthesizeRequest(text=SHORT, format="midi"), grpc.StatusCode.INVALID_ARGUMENT),
    ]
    for request, code in cases:
        with pytest.raises(grpc.RpcError) as info:
            client.Synthesize(request, timeout=10)
        assert info.value.code() == code, request
    with pytest.raises(grpc.RpcError) as info:
        list(client.SynthesizeStream(pb.SynthesizeRequest(text=SHORT, voice="nobody"), timeout=10))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert dict(info.value.trailing_metadata())["voxserve-error-code"] == "unknown_voice"


def requests(items: queue.Queue[pb.StreamRequest | None]) -> Iterator[pb.StreamRequest]:
    while (item := items.get()) is not None:
        yield item


def test_bidirectional_stream(server: RunningServer) -> None:
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    responses = stub(server).StreamingSynthesize(requests(outbox), timeout=60)
    outbox.put(pb.StreamRequest(config=pb.StreamConfig(voice=PIPER, format="pcm", word_timings=True)))
    ready = next(responses)
    assert ready.WhichOneof("kind") == "ready" and ready.ready.sample_rate == 22050
    outbox.put(pb.StreamRequest(ping=pb.Ping()))
    assert next(responses).WhichOneof("kind") == "pong"
    for fragment in ("Hello there, ", "how can I help ", "you today?"):
        outbox.put(pb.StreamRequest(text=pb.TextFragment(text=fragment)))
    outbox.put(pb.StreamRequest(close=pb.CloseUtterance()))
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text="A second utterance.")))
    outbox.put(None)  # half-close: the server finishes both utterances, then ends the stream
    done: list[pb.Done] = []
    audio = bytearray()
    for response in responses:
        kind = response.WhichOneof("kind")
        if kind == "chunk":
            audio += response.chunk.audio
        elif kind == "done":
            done.append(response.done)
        else:
            pytest.fail(f"unexpected {kind}")
    assert [d.utterance for d in done] == [0, 1]
    assert not any(d.cancelled for d in done)
    assert abs(len(audio) / 2 / 22050 - sum(d.audio_s for d in done)) < 0.02


def test_bidirectional_utterance_with_nothing_to_speak_fails_alone(server: RunningServer) -> None:
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    responses = stub(server).StreamingSynthesize(requests(outbox), timeout=60)
    outbox.put(pb.StreamRequest(config=pb.StreamConfig(voice=PIPER, format="pcm")))
    assert next(responses).WhichOneof("kind") == "ready"
    for text in ("...", "Still spoken."):
        outbox.put(pb.StreamRequest(text=pb.TextFragment(text=text)))
        outbox.put(pb.StreamRequest(close=pb.CloseUtterance()))
    outbox.put(None)
    kinds = [response.WhichOneof("kind") for response in responses]
    assert kinds[:2] == ["error", "done"] and kinds[-1] == "done" and "chunk" in kinds[2:]


def test_bidirectional_flush_and_cancel(server: RunningServer) -> None:
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    responses = stub(server).StreamingSynthesize(requests(outbox), timeout=60)
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text="words without an ending")))
    assert next(responses).WhichOneof("kind") == "ready"  # default voice, configured implicitly
    outbox.put(pb.StreamRequest(flush=pb.Flush()))
    assert next(responses).WhichOneof("kind") == "chunk"  # spoken on flush, before close
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text=" and then " * 40 + "the end.")))
    outbox.put(pb.StreamRequest(cancel=pb.Cancel()))
    while (response := next(responses)).WhichOneof("kind") != "done":
        assert response.WhichOneof("kind") == "chunk"
    assert response.done.cancelled and response.done.audio_s < 10
    outbox.put(None)
    assert list(responses) == []


def test_invalid_message_in_stream_is_reported(server: RunningServer) -> None:
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    responses = stub(server).StreamingSynthesize(requests(outbox), timeout=30)
    outbox.put(pb.StreamRequest(config=pb.StreamConfig(voice="nobody")))
    error = next(responses)
    assert error.WhichOneof("kind") == "error" and error.error.code == "unknown_voice"
    outbox.put(pb.StreamRequest())
    assert next(responses).error.code == "invalid_request"
    outbox.put(None)
    assert list(responses) == []


def test_auth_capacity_and_cancel(make_server: ServerMaker) -> None:
    secret = "grpc-secret-grpc-secret-grpc-secret!"
    busy = make_server(api_keys=["g-key"], jwt_secret=secret, max_streams=1, max_queue=0)
    client = stub(busy)
    for metadata in ((), (("authorization", "Bearer wrong"),)):
        with pytest.raises(grpc.RpcError) as info:
            client.Synthesize(pb.SynthesizeRequest(text=SHORT), metadata=metadata, timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    token = jwt.encode({"sub": "g", "exp": time.time() + 60}, secret, algorithm="HS256")
    voices = client.ListVoices(pb.ListVoicesRequest(), metadata=(("authorization", f"Bearer {token}"),), timeout=5)
    assert voices.voices
    auth = (("authorization", "Bearer g-key"),)
    long_text = " ".join(["This stream holds the only slot for a while."] * 10)
    stream = client.SynthesizeStream(pb.SynthesizeRequest(text=long_text), metadata=auth, timeout=60)
    next(stream)
    with pytest.raises(grpc.RpcError) as info:
        client.Synthesize(pb.SynthesizeRequest(text=SHORT), metadata=auth, timeout=10)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "retry-after" in dict(info.value.trailing_metadata())
    stream.cancel()
    deadline = time.monotonic() + 3
    while busy.metric("voxserve_active_streams") != 0.0 or busy.state.service._live:
        assert time.monotonic() < deadline, "cancelled gRPC stream still holds its slot"
        time.sleep(0.05)
    assert len(client.Synthesize(pb.SynthesizeRequest(text="Hi."), metadata=auth, timeout=30).audio) > 1000


def test_rate_limited(make_server: ServerMaker) -> None:
    limited = make_server(rate_limit_per_minute=1)
    client = stub(limited)
    client.ListVoices(pb.ListVoicesRequest(), timeout=5)
    with pytest.raises(grpc.RpcError) as info:
        client.ListVoices(pb.ListVoicesRequest(), timeout=5)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_kokoro(server: RunningServer) -> None:
    reply = stub(server).Synthesize(pb.SynthesizeRequest(text=SHORT, voice=KOKORO), timeout=60)
    assert reply.sample_rate == 24000 and 1.5 < reply.audio_s < 4.5 and pcm_rms(reply.audio) > 0.01


def test_an_ipv6_host_is_listened_on_in_brackets() -> None:
    """VOXSERVE_HOST=:: (every IPv6 address) made gRPC fail to start on ``:::50051``."""
    from voxserve.server.grpc_server import listen_address

    assert listen_address("::", 50051) == "[::]:50051" and listen_address("::1", 0) == "[::1]:0"
    assert listen_address("0.0.0.0", 50051) == "0.0.0.0:50051"
