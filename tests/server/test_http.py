"""HTTP transport end to end: real uvicorn, real Piper (and one Kokoro) synthesis, real clients."""

from __future__ import annotations

import base64
import json
import time

import httpx
import openai
import pytest
from tests.server.audio_util import decoded_seconds, pcm_rms, pcm_seconds
from tests.server.conftest import KOKORO, PIPER, SHORT, RunningServer

from voxserve.audio import supported_formats

LONG = " ".join(["This sentence is here to make the reply long enough to stream for a while."] * 12)


def speech(server: RunningServer, **body: object) -> httpx.Response:
    return httpx.post(server.base + "/v1/audio/speech", json={"input": SHORT, "voice": PIPER, **body}, timeout=60)


def test_pcm_streams_chunked(server: RunningServer) -> None:
    pieces: list[tuple[float, int]] = []
    start = time.perf_counter()
    with httpx.stream(
        "POST",
        server.base + "/v1/audio/speech",
        json={"input": LONG[:150], "voice": PIPER, "response_format": "pcm"},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "audio/pcm"
        assert response.headers["transfer-encoding"] == "chunked"
        rate = int(response.headers["x-sample-rate"])
        for piece in response.iter_raw():
            pieces.append((time.perf_counter() - start, len(piece)))
    data_s = pcm_seconds(b"\0" * sum(n for _, n in pieces), rate)
    assert rate == 24000  # OpenAI's pcm rate by default, resampled from Piper's 22.05 kHz
    assert data_s > 6
    assert len(pieces) > 5
    # audio arrives as it is made: the first piece long before the last
    assert pieces[0][0] < pieces[-1][0] / 3


@pytest.mark.parametrize("fmt", [f for f in ("wav", "mp3", "opus", "flac", "aac") if f in supported_formats()])
def test_formats_decode(server: RunningServer, fmt: str) -> None:
    response = speech(server, response_format=fmt)
    assert response.status_code == 200, response.text
    assert 1.5 < decoded_seconds(response.content) < 4.5


def test_sample_rate_and_speed(server: RunningServer) -> None:
    normal = speech(server, response_format="pcm", sample_rate=16000)
    fast = speech(server, response_format="pcm", sample_rate=16000, speed=2.0)
    assert normal.headers["x-sample-rate"] == "16000"
    normal_s, fast_s = pcm_seconds(normal.content, 16000), pcm_seconds(fast.content, 16000)
    assert pcm_rms(normal.content) > 0.01
    assert fast_s < normal_s * 0.75


def test_sse_events_with_timestamps(server: RunningServer) -> None:
    response = speech(server, response_format="pcm", stream_format="sse", timestamps=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    assert events[-1]["type"] == "speech.audio.done"
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert 1.5 < pcm_seconds(audio, 24000) < 4.5
    words = [w["word"] for e in events[:-1] for w in e["words"]]
    assert "Hello" in words and "today" in words


def test_openai_client_unchanged(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=server.base + "/v1", api_key="unused")
    result = client.audio.speech.create(model="tts-1", voice="alloy", input=SHORT, response_format="wav")
    assert 1.5 < decoded_seconds(result.content) < 4.5
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice=PIPER, input=SHORT, response_format="pcm"
    ) as streamed:
        data = b"".join(streamed.iter_bytes())
    assert 1.5 < pcm_seconds(data, 24000) < 4.5
    assert "tts-1" in {m.id for m in client.models.list()}


def test_catalogue(server: RunningServer) -> None:
    for path in ("/v1/voices", "/v1/audio/voices"):
        body = httpx.get(server.base + path).json()
        ids = {v["id"] for v in body["data"]}
        assert {PIPER, KOKORO} <= ids
        assert body["voices"] == [v["id"] for v in body["data"]]
    models = {m["id"] for m in httpx.get(server.base + "/v1/models").json()["data"]}
    assert {"tts-1", "piper", "kokoro"} <= models


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"voice": "no_such_voice"}, 400, "unknown_voice"),
        ({"response_format": "ogg-vorbis"}, 400, "invalid_request"),
        ({"speed": 10}, 400, "invalid_request"),
        ({"sample_rate": 1000}, 400, "invalid_request"),
        ({"input": "   "}, 400, "invalid_request"),
        ({"input": None}, 400, "invalid_request"),
        ({"stream_format": "websocket"}, 400, "invalid_request"),
    ],
)
def test_invalid_requests(server: RunningServer, body: dict[str, object], status: int, code: str) -> None:
    response = speech(server, **body)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and error["message"]


def test_oversized_input_and_malformed_body(make_server: object) -> None:
    small = make_server(max_input_chars=50)  # type: ignore[operator]
    too_long = speech(small, input="word " * 20)
    assert too_long.status_code == 413 and too_long.json()["error"]["code"] == "input_too_large"
    garbage = httpx.post(
        small.base + "/v1/audio/speech", content=b"\x00\xff{", headers={"content-type": "application/json"}
    )
    assert garbage.status_code == 400


def test_kokoro(server: RunningServer) -> None:
    response = speech(server, voice=KOKORO, response_format="pcm", sample_rate=24000)
    assert response.status_code == 200 and response.headers["x-voice"] == KOKORO
    assert 1.5 < pcm_seconds(response.content, 24000) < 4.5 and pcm_rms(response.content) > 0.01


def test_auth_keys_and_jwt(make_server: object) -> None:
    import jwt

    secret = "test-secret-test-secret-test-secret!"
    secured = make_server(api_keys=["key-1"], jwt_secret=secret)  # type: ignore[operator]
    assert speech(secured).status_code == 401
    assert httpx.get(secured.base + "/v1/voices").status_code == 401
    bad = httpx.post(secured.base + "/v1/audio/speech", json={"input": "x"}, headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "unauthorized"
    good = httpx.post(
        secured.base + "/v1/audio/speech",
        json={"input": "Hi.", "voice": PIPER},
        headers={"Authorization": "Bearer key-1"},
    )
    assert good.status_code == 200 and len(good.content) > 1000
    token = jwt.encode({"sub": "u1", "exp": time.time() + 60}, secret, algorithm="HS256")
    client = openai.OpenAI(base_url=secured.base + "/v1", api_key=token)
    assert (
        len(client.audio.speech.create(model="tts-1", voice=PIPER, input="Hi.", response_format="pcm").content) > 1000
    )
    # health and metrics stay open
    assert httpx.get(secured.base + "/readyz").status_code == 200
    assert httpx.get(secured.base + "/metrics").status_code == 200


def test_rate_limit(make_server: object) -> None:
    limited = make_server(rate_limit_per_minute=2)  # type: ignore[operator]
    statuses = [httpx.get(limited.base + "/v1/voices").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    refused = httpx.get(limited.base + "/v1/voices")
    assert refused.json()["error"]["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1


def test_over_capacity_and_disconnect_frees_the_stream(make_server: object) -> None:
    busy = make_server(max_streams=1, max_queue=0)  # type: ignore[operator]
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST", busy.base + "/v1/audio/speech", json={"input": LONG, "voice": PIPER, "response_format": "pcm"}
        ) as response,
    ):
        pieces = response.iter_raw()  # keep the iterator: dropping it closes the response
        next(pieces)
        assert busy.metric("voxserve_active_streams") == 1.0
        refused = speech(busy)
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "overloaded"
        assert int(refused.headers["retry-after"]) >= 1
    # the client went away mid-stream: the stream and its slot are freed promptly
    deadline = time.monotonic() + 3
    while busy.metric("voxserve_active_streams") != 0.0:
        assert time.monotonic() < deadline, "stream still active after client disconnect"
        time.sleep(0.05)
    assert not busy.state.service._live
    assert speech(busy).status_code == 200
    metrics = httpx.get(busy.base + "/metrics").text
    assert 'voxserve_requests_total{route="/v1/audio/speech",status="503",transport="http"} 1.0' in metrics
    assert (
        'voxserve_time_to_first_audio_seconds_count{engine="piper",transport="http",voice="en_US-joe-medium"}'
        in metrics
    )


def test_cors(make_server: object) -> None:
    app = make_server(cors_origins=["https://app.example"])  # type: ignore[operator]
    preflight = httpx.options(
        app.base + "/v1/audio/speech",
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"},
    )
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    other = httpx.options(
        app.base + "/v1/audio/speech",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in other.headers
