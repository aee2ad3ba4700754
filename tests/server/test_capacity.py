"""A full server refuses new streams at once on every transport, says so on /readyz, and exports its load.

The runtime is scripted (tests/server/fakes.py) so that a stream stays open on cue; the admission rule
itself (shares of measured capacity) is tested in test_admission.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

from .fakes import ScriptedRuntime
from .support import RunningServer, server_settings


def test_a_full_replica_refuses_at_once_and_reports_full() -> None:
    release = threading.Event()  # the stream holding the only slot stays open until every transport was refused
    running = RunningServer(
        server_settings(default_voice="fake", max_streams=1), ScriptedRuntime([(0.0, 0.2), (release, 0.2)])
    )
    body = {"input": "hello", "voice": "fake", "response_format": "pcm"}
    try:
        idle = {"status": "ready", "load": 0.0, "streams": 0, "max_streams": 1}
        assert httpx.get(running.base + "/readyz").json() == idle
        holder = threading.Thread(target=lambda: httpx.post(running.base + "/v1/audio/speech", json=body, timeout=10))
        holder.start()
        deadline = time.monotonic() + 5
        while running.metric("voxserve_active_streams") < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)

        ready = httpx.get(running.base + "/readyz")
        assert ready.status_code == 503
        assert ready.json() == {"status": "full", "load": 1.0, "streams": 1, "max_streams": 1}
        assert running.metric("voxserve_load") == pytest.approx(1.0)

        refused = httpx.post(running.base + "/v1/audio/speech", json=body, timeout=10)
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "overloaded"
        assert int(refused.headers["Retry-After"]) >= 1

        with connect(running.ws) as ws:
            ws.send(json.dumps({"type": "config", "voice": "fake"}))
            ws.send(json.dumps({"type": "text", "text": "hello"}))
            ws.send(json.dumps({"type": "close"}))
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    ws.recv(timeout=5)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013

        stub = pb_grpc.VoxServeStub(grpc.insecure_channel(running.grpc))
        with pytest.raises(grpc.RpcError) as info:
            list(stub.SynthesizeStream(pb.SynthesizeRequest(text="hello", voice="fake", format="pcm"), timeout=5))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

        def requests() -> Iterator[pb.StreamRequest]:  # still writing text when the refusal comes
            yield pb.StreamRequest(config=pb.StreamConfig(voice="fake", format="pcm"))
            for _ in range(50):
                yield pb.StreamRequest(text=pb.TextFragment(text="hello "))
                time.sleep(0.01)

        responses: list[pb.StreamResponse] = []
        with pytest.raises(grpc.RpcError) as info:
            responses.extend(stub.StreamingSynthesize(requests(), timeout=5))
        # the status may be grpc's own INTERNAL here (a client-side race when the call ends during a
        # write): the refusal is also sent in-band, before the status, and is read in any case
        refusals = [r.error for r in responses if r.WhichOneof("kind") == "error"]
        assert [r.code for r in refusals] == ["overloaded"] and "at capacity" in refusals[0].message
        assert info.value.code() in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INTERNAL)

        release.set()
        holder.join(10)
        assert httpx.get(running.base + "/readyz").status_code == 200
        assert running.metric("voxserve_load") == 0.0
    finally:
        release.set()
        running.stop()
