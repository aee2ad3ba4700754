"""The audit log: one JSON line per utterance on every transport, naming the caller by key id, JWT
subject or address, never holding a credential, and the text only with log_text."""

from __future__ import annotations

import json
import time
from pathlib import Path

import grpc
import httpx
import jwt
import pytest
from websockets.sync.client import connect

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

from .support import PIPER, RunningServer, ServerMaker
from .test_ws import send, utterance

pytestmark = [pytest.mark.e2e, pytest.mark.alone]  # the audit line's stall_s must be 0

KEY = "audit-key-5e6f7a8b9c0d"
SECRET = "audit-jwt-secret-0123456789abcdef0123"
TEXT = "Audit me, please."


def lines(path: Path, count: int) -> list[dict[str, object]]:
    deadline = time.monotonic() + 10
    while True:
        found = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_one_line_per_utterance_on_every_transport(make_server: ServerMaker, tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    server: RunningServer = make_server(api_keys=[KEY], jwt_secret=SECRET, audit_log_file=path)
    token = jwt.encode({"sub": "alice", "exp": time.time() + 300}, SECRET, algorithm="HS256")
    reply = httpx.post(
        server.base + "/v1/audio/speech",
        json={"input": TEXT, "voice": PIPER},
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=30,
    )
    assert reply.status_code == 200
    with connect(f"{server.ws}?token={token}") as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        ws.recv(timeout=10)
        send(ws, type="text", text=TEXT)
        send(ws, type="close")
        utterance(ws)
    with grpc.insecure_channel(server.grpc) as channel:
        auth = (("authorization", f"Bearer {KEY}"),)
        pb_grpc.VoxServeStub(channel).Synthesize(pb.SynthesizeRequest(text=TEXT, voice=PIPER), metadata=auth)
    found = lines(path, 3)
    assert [line["transport"] for line in found] == ["http", "ws", "grpc"]
    assert found[0]["client"] == found[2]["client"] and str(found[0]["client"]).startswith("key:")
    assert found[1]["client"] == "jwt:alice"
    for line in found:
        assert line["ip"] == "127.0.0.1" and line["voice"] == PIPER and line["status"] == "ok"
        assert line["chars"] == len(TEXT) and float(str(line["audio_s"])) > 0.5
        assert line["stall_s"] == 0.0 and line["stalls"] == 0 and "time" in line and "text" not in line
    raw = path.read_text()
    assert KEY not in raw and token not in raw and TEXT not in raw


def test_the_text_only_with_log_text(make_server: ServerMaker, tmp_path: Path) -> None:
    path = tmp_path / "audit-text.jsonl"
    server: RunningServer = make_server(log_text=True, audit_log_file=path)
    assert httpx.post(server.base + "/v1/audio/speech", json={"input": TEXT, "voice": PIPER}).status_code == 200
    (line,) = lines(path, 1)
    assert line["text"] == TEXT and line["client"] == "127.0.0.1"
