"""Protocol fuzzing of gRPC's bidirectional stream: random message sequences (config with any values,
text of any Unicode, floods of flush/cancel/close, an empty oneof) end only in known events and error
codes; the call ends OK or with a client-error status, never INTERNAL or UNKNOWN; and a normal gRPC client
speaking alongside the fuzzer gets its audio, never a refusal."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from voxserve.runtime import Runtime
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc
from voxserve.server.runtime_api import RuntimeLike

from .support import PIPER, SHORT, RunningServer
from .test_ws_fuzz import KNOWN_CODES, Bystander


@pytest.fixture(scope="module")
def shared_runtime(fake_runtime: Runtime) -> RuntimeLike:
    """This module's servers speak with the fake engines: what is checked is the protocol, not the sound."""
    return fake_runtime


CLEAN = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.CANCELLED}

configs = st.builds(
    pb.StreamConfig,
    voice=st.sampled_from(["", "en_US-joe-medium", "af_heart", "nope", "af_heart:inf+af_bella:1"]),
    lang=st.none() | st.sampled_from(["en-us", "xx", "zh", ""]),
    speed=st.none() | st.floats(width=32, allow_nan=True),
    format=st.sampled_from(["", "pcm", "wav", "mp3", "bogus"]),
    sample_rate=st.none() | st.integers(-(2**31), 2**31 - 1),
    word_timings=st.booleans(),
)
requests = st.one_of(
    configs.map(lambda config: pb.StreamRequest(config=config)),
    st.text(max_size=40).map(lambda text: pb.StreamRequest(text=pb.TextFragment(text=text))),
    st.sampled_from(
        [
            pb.StreamRequest(flush=pb.Flush()),
            pb.StreamRequest(close=pb.CloseUtterance()),
            pb.StreamRequest(cancel=pb.Cancel()),
            pb.StreamRequest(ping=pb.Ping()),
            pb.StreamRequest(),  # no kind at all
        ]
    ),
)


@pytest.fixture()
def bystander(server: RunningServer) -> Iterator[Bystander]:
    """A normal gRPC client streaming whole utterances throughout the test; its failures fail the test."""

    def speak() -> None:
        with grpc.insecure_channel(server.grpc) as channel:
            request = pb.SynthesizeRequest(text=SHORT, voice=PIPER, format="pcm")
            chunks = list(pb_grpc.VoxServeStub(channel).SynthesizeStream(request, timeout=60))
            assert chunks and chunks[0].audio

    with Bystander(speak) as running:
        yield running


@given(sequence=st.lists(requests, max_size=10))
@settings(  # ci: 10 examples; VOXSERVE_FUZZ=long: 666. The bystander spans all examples, on purpose.
    max_examples=max(10, settings().max_examples // 3),
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@example(sequence=[pb.StreamRequest(close=pb.CloseUtterance())] * 30 + [pb.StreamRequest(cancel=pb.Cancel())] * 30)
@example(sequence=[pb.StreamRequest(text=pb.TextFragment(text="1" * 400)), pb.StreamRequest(close=pb.CloseUtterance())])
def test_any_request_sequence_gets_clean_answers(
    server: RunningServer, bystander: Bystander, sequence: list[pb.StreamRequest]
) -> None:
    with grpc.insecure_channel(server.grpc) as channel:
        call = pb_grpc.VoxServeStub(channel).StreamingSynthesize(iter(sequence), timeout=60)
        try:
            for response in call:
                kind = response.WhichOneof("kind")
                assert kind in ("ready", "chunk", "done", "error", "pong"), response
                if kind == "error":
                    assert response.error.code in KNOWN_CODES and response.error.code != "internal_error"
        except grpc.RpcError as exc:
            assert exc.code() in CLEAN, (exc.code(), exc.details())
