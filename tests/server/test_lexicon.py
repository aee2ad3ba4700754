"""Pronunciation dictionaries end to end: per-request entries on HTTP, WebSocket and gRPC, the server's
file, and the CLI; heard by Whisper (real Piper, real clients over loopback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import soundfile
from websockets.sync.client import connect

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.text.lexicon import load_lexicon

from .support import PIPER, RunningServer
from .test_grpc import stub
from .test_ws import recv_json, send, utterance

pytestmark = pytest.mark.e2e
BRAND = "I bought the Xyzzo today."


@pytest.fixture(scope="module")
def banana(shared_runtime: Any) -> str:
    """How the Piper voice's alphabet (espeak) spells "banana", from the real frontend."""
    return str(shared_runtime.frontend.phonemize_segment("banana", "en-us", "espeak")[0].phonemes)


def heard(audio: bytes, rate: int, transcribe: Any) -> str:
    return str(transcribe(np.frombuffer(audio, dtype=np.int16).astype(np.float32) / 32768, rate)).lower()


def test_a_brand_name_is_spoken_as_the_request_says(server: RunningServer, banana: str, transcribe: Any) -> None:
    body: dict[str, Any] = {"input": BRAND, "voice": PIPER, "response_format": "pcm", "sample_rate": 16000}
    plain = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    body["lexicon"] = [{"word": "xyzzo", "phonemes": banana}]
    changed = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    assert plain.status_code == changed.status_code == 200
    # Whisper hears "banana" (sometimes run into the word before, "abenana")
    assert "nana" not in heard(plain.content, 16000, transcribe)
    assert "nana" in heard(changed.content, 16000, transcribe)


def test_unknown_symbols_are_refused_by_name(server: RunningServer) -> None:
    entry = {"word": "Xyzzo", "phonemes": "zˈɪz§"}
    body = {"input": BRAND, "voice": PIPER, "lexicon": [entry]}
    response = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
    assert response.status_code == 400 and "'§'" in response.json()["error"]["message"]
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, lexicon=[{"regex": "x+", "text": "y"}])
        error = recv_json(ws)
        assert error["type"] == "error" and "server's lexicon file" in error["message"]
        send(ws, type="config", voice=PIPER, lexicon=[entry])
        error = recv_json(ws)  # refused at the config, naming the symbol, not at each utterance after a ready
        assert error["type"] == "error" and "'§'" in error["message"], error
        send(ws, type="config", voice=PIPER)  # the connection goes on
        assert recv_json(ws)["type"] == "ready"


def test_text_entries_over_grpc_keep_the_sent_characters(server: RunningServer) -> None:
    text = "Deploy it on k8s today."
    request = pb.SynthesizeRequest(
        text=text, voice=PIPER, word_timings=True, lexicon=[pb.LexiconEntry(word="K8S", text="kubernetes")]
    )
    words = [w for c in stub(server).SynthesizeStream(request, timeout=30) for w in c.words]
    spoken = {w.word: text[w.char_start : w.char_end] for w in words}
    assert spoken.get("kubernetes") == "k8s", spoken


def test_the_servers_file(server: RunningServer, shared_runtime: Any, tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "lexicon.json"
    path.write_text(json.dumps({"en-us": [{"regex": r"\bv(\d+)\.(\d+)\b", "text": r"version \1 point \2"}]}))
    monkeypatch.setattr(shared_runtime, "lexicon", load_lexicon(path))  # what VOXSERVE_LEXICON loads
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, word_timings=True)
        recv_json(ws)
        send(ws, type="text", text="Update to v2.15 now.")
        send(ws, type="close")
        chunks, _, _ = utterance(ws)
    assert [w["word"] for c in chunks for w in c["words"]][:5] == ["Update", "to", "version", "two", "point"]


def test_the_cli(tmp_path: Path, banana: str, transcribe: Any) -> None:
    lexicon, out = tmp_path / "lexicon.json", tmp_path / "brand.wav"
    lexicon.write_text(json.dumps({"en-us": [{"word": "Xyzzo", "phonemes": banana, "alphabet": "espeak"}]}))
    command = [sys.executable, "-m", "voxserve", "-q", "say", "-v", PIPER, "--lexicon", str(lexicon), "-o", str(out)]
    subprocess.run([*command, BRAND], check=True, capture_output=True, timeout=120)
    samples, rate = soundfile.read(out, dtype="float32")
    assert "nana" in str(transcribe(samples, rate)).lower()
