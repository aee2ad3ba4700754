"""The OpenAPI document is true: schemathesis, run against a real server's /openapi.json, finds no 5xx,
no undocumented status, content type or header, and no response that breaks its schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from .support import RunningServer, ServerMaker

pytestmark = pytest.mark.e2e

CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
    )
)


def test_the_document_states_the_real_contract(make_server: ServerMaker) -> None:
    server: RunningServer = make_server(max_input_chars=300)
    doc = httpx.get(server.base + "/openapi.json").json()
    speech = doc["paths"]["/v1/audio/speech"]["post"]["responses"]
    assert "422" not in speech and {"400", "401", "413", "429", "503"} <= set(speech)
    assert "audio/mpeg" in speech["200"]["content"] and "text/event-stream" in speech["200"]["content"]
    assert "application/json" not in speech["200"]["content"]
    body = doc["components"]["schemas"]["SpeechBody"]["properties"]
    assert body["input"]["minLength"] == 1 and body["input"]["maxLength"] == 300
    assert (body["speed"]["minimum"], body["speed"]["maximum"]) == (0.5, 2.0)
    assert {"mp3", "wav", "pcm"} <= set(body["response_format"]["enum"])
    # the validation errors it documents as 400 are 400 (FastAPI's 422 is never sent)
    reply = httpx.post(server.base + "/v1/audio/speech", json={"input": 5})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == "invalid_request"


def test_schemathesis_finds_nothing(make_server: ServerMaker, tmp_path: Path) -> None:
    # a small input limit keeps the longest generated text quick to speak; the document states it
    server: RunningServer = make_server(max_input_chars=200)
    tool = Path(sys.executable).parent / "schemathesis"
    run = subprocess.run(
        [str(tool), "run", server.base + "/openapi.json", "--checks", CHECKS, "--max-examples", "25",
         "--generation-deterministic", "--workers", "1", "--request-timeout", "60", "--no-color"],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "No issues found" in run.stdout
    generated = int(run.stdout.split(" generated")[0].rsplit("\n", 1)[-1].strip().split()[0])
    assert generated >= 100  # the run did test something
