"""Protocol 2 on gRPC ``StreamingSynthesize``: contexts named by ``context_id`` (docs/protocol.md), with
the real models: the contexts' end-to-end check (test_ws_contexts.py checks the protocol on the fake engines)."""

from __future__ import annotations

import queue

import pytest

from voxserve.server.grpc_gen import voxserve_pb2 as pb

from .audio_util import pcm_rms
from .support import PIPER, RunningServer, ServerMaker
from .test_grpc import requests, stub
from .test_ws_contexts import LONG

pytestmark = pytest.mark.e2e


def test_contexts_overlap_and_cancel_alone(server: RunningServer) -> None:
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    responses = stub(server).StreamingSynthesize(requests(outbox), timeout=60)
    outbox.put(pb.StreamRequest(config=pb.StreamConfig(voice=PIPER, format="pcm", word_timings=True, protocol=2)))
    ready = next(responses)
    assert ready.WhichOneof("kind") == "ready" and ready.context_id == ""
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text=LONG), context_id="a"))
    outbox.put(pb.StreamRequest(flush=pb.Flush(), context_id="a"))
    first = next(responses)
    assert first.WhichOneof("kind") == "chunk" and first.context_id == "a"
    outbox.put(pb.StreamRequest(cancel=pb.Cancel(), context_id="a"))
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text="Something else, then."), context_id="b"))
    outbox.put(pb.StreamRequest(flush=pb.Flush(), context_id="nobody"))
    outbox.put(None)  # half-close: b is finished, then the call ends
    chunks: dict[str, list[pb.AudioChunk]] = {"a": [first.chunk], "b": []}
    done: dict[str, pb.Done] = {}
    errors: list[pb.StreamResponse] = []
    for response in responses:
        kind = response.WhichOneof("kind")
        if kind == "chunk":
            assert response.context_id not in done, "audio after done"
            chunks[response.context_id].append(response.chunk)
        elif kind == "done":
            done[response.context_id] = response.done
        else:
            assert kind == "error"
            errors.append(response)
    assert [(e.context_id, e.error.code) for e in errors] == [("nobody", "unknown_context")]
    assert done["a"].cancelled and done["a"].chunks == len(chunks["a"]) and done["a"].audio_s < 5
    assert not done["b"].cancelled and done["b"].chunks == len(chunks["b"])
    assert chunks["b"][-1].final and not any(c.final for c in chunks["b"][:-1])
    assert pcm_rms(b"".join(c.audio for c in chunks["b"])) > 0.01
    assert "else" in [w.word for c in chunks["b"] for w in c.words]


def test_text_after_a_config_with_a_malformed_lexicon_entry_is_refused(server: RunningServer) -> None:
    """The config's fields parse, but its lexicon entry has no pronunciation: the config is refused, and
    the text after it is never spoken with the connection's defaults."""
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    responses = stub(server).StreamingSynthesize(requests(outbox), timeout=60)
    outbox.put(pb.StreamRequest(config=pb.StreamConfig(voice=PIPER, lexicon=[pb.LexiconEntry(word="x")])))
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text="Never spoken with the defaults.")))
    outbox.put(pb.StreamRequest(close=pb.CloseUtterance()))
    outbox.put(None)
    kinds = [(r.WhichOneof("kind"), r.error.message if r.WhichOneof("kind") == "error" else "") for r in responses]
    assert kinds[0][0] == "error" and "lexicon" in kinds[0][1], kinds
    assert kinds[1][0] == "error" and "text ignored" in kinds[1][1], kinds
    assert not any(kind == "chunk" for kind, _ in kinds), kinds


def test_a_context_refused_as_overloaded_says_when_to_retry(make_server: ServerMaker) -> None:
    """As on the WebSocket, the overloaded context's StreamError carries retry_after_s (it had no field)."""
    full = make_server(max_streams=1, max_queue=0)
    outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()
    responses = stub(full).StreamingSynthesize(requests(outbox), timeout=60)
    outbox.put(pb.StreamRequest(config=pb.StreamConfig(voice=PIPER, format="pcm", protocol=2)))
    assert next(responses).WhichOneof("kind") == "ready"
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text=LONG), context_id="a"))
    outbox.put(pb.StreamRequest(flush=pb.Flush(), context_id="a"))
    assert next(responses).context_id == "a"  # a speaks: the one stream slot is taken
    outbox.put(pb.StreamRequest(text=pb.TextFragment(text="And me."), context_id="b"))
    outbox.put(pb.StreamRequest(cancel=pb.Cancel(), context_id="a"))
    outbox.put(None)
    errors = [r for r in responses if r.WhichOneof("kind") == "error"]
    assert [(e.context_id, e.error.code) for e in errors] == [("b", "overloaded")]
    assert errors[0].error.HasField("retry_after_s") and errors[0].error.retry_after_s > 0
