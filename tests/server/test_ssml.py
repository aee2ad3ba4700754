"""SSML over HTTP and gRPC: read as speech, never as markup (real Piper, Whisper listening)."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np
import pytest

from voxserve.server.grpc_gen import voxserve_pb2 as pb

from .support import PIPER, RunningServer
from .test_grpc import stub

pytestmark = pytest.mark.e2e
DOCUMENT = (
    '<speak><p>Welcome to the <sub alias="World Wide Web">WWW</sub>.</p>'
    '<break time="1s"/><s>Your code is <say-as interpret-as="characters">XKCD</say-as></s></speak>'
)


def test_ssml_is_spoken_not_read_out(server: RunningServer, transcribe: Any) -> None:
    body = {"input": DOCUMENT, "voice": PIPER, "response_format": "pcm", "sample_rate": 16000}
    response = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 200, response.text
    heard = str(transcribe(np.frombuffer(response.content, dtype=np.int16).astype(np.float32) / 32768, 16000))
    heard = heard.lower()
    # the alias, however Whisper spaces it, and not the letters: Whisper tiny.en hears the sentence-final
    # "Web." as "what?" at some window cuts, on the tree before this check was loosened as well
    assert "worldwidew" in heard.replace(" ", ""), heard
    assert not any(letters in heard for letters in ("double", "w w w", "www")), heard
    assert not any(markup in heard for markup in ("speak", "break", "time equals", "slash", "say as")), heard


def test_malformed_ssml_is_a_400_naming_the_problem(server: RunningServer) -> None:
    body = {"input": "<speak>Hello <break time='1s'></speak>", "voice": PIPER}
    response = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 400 and "malformed SSML" in response.json()["error"]["message"]
    body = {"input": "Hello", "voice": PIPER, "input_format": "markdown"}
    assert httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30).status_code == 400


def test_grpc_input_format(server: RunningServer) -> None:
    request = pb.SynthesizeRequest(
        text='<speak><sub alias="World Wide Web">WWW</sub></speak>', voice=PIPER, word_timings=True, input_format="ssml"
    )
    reply = stub(server).Synthesize(request, timeout=30)
    assert [w.word for w in reply.words] == ["World", "Wide", "Web"]
