"""HTTP transport end to end: real uvicorn, real Piper (and one Kokoro) synthesis, real clients."""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Iterator

import httpx
import openai
import pytest

from voxserve.audio import supported_formats

from .audio_util import decoded_seconds, pcm_rms, pcm_seconds
from .support import KOKORO, PIPER, SHORT, RunningServer, ServerMaker

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
    assert fast_s < normal_s * 0.85


def test_sse_events_with_timestamps(server: RunningServer) -> None:
    response = speech(server, response_format="pcm", stream_format="sse", timestamps=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    assert events[-1]["type"] == "speech.audio.done"
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert 1.5 < pcm_seconds(audio, 24000) < 4.5
    assert all(isinstance(e["words"], list) for e in events[:-1])


def test_sse_word_timestamps(server: RunningServer) -> None:
    response = speech(server, response_format="pcm", stream_format="sse", timestamps=True)
    events = [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]
    words = [w for e in events[:-1] for w in e["words"]]
    assert [w["word"] for w in words][:2] == ["Hello", "there"] and "today" in [w["word"] for w in words]
    starts = [w["start_s"] for w in words]
    assert starts == sorted(starts) and all(w["end_s"] > w["start_s"] for w in words)


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
    assert {"tts-1", "gpt-4o-mini-tts", "piper", "kokoro"} <= models
    client = openai.OpenAI(base_url=server.base + "/v1", api_key="unused", max_retries=0)
    assert client.models.retrieve("kokoro").id == "kokoro"
    with pytest.raises(openai.NotFoundError, match="GET /v1/models lists them"):
        client.models.retrieve("tts-9")


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


def test_oversized_input_and_malformed_body(make_server: ServerMaker) -> None:
    small = make_server(max_input_chars=50)
    too_long = speech(small, input="word " * 20)
    assert too_long.status_code == 413 and too_long.json()["error"]["code"] == "input_too_large"
    garbage = httpx.post(
        small.base + "/v1/audio/speech", content=b"\x00\xff{", headers={"content-type": "application/json"}
    )
    assert garbage.status_code == 400
    huge = b'{"input": "' + b"a" * 400_000 + b'"}'
    refused = httpx.post(small.base + "/v1/audio/speech", content=huge, headers={"content-type": "application/json"})
    assert refused.status_code == 413 and refused.json()["error"]["code"] == "input_too_large"
    # a body left unread ends its connection (its rest would come next); one read whole does not
    assert refused.headers["connection"] == "close" and too_long.headers.get("connection") != "close"

    def chunked() -> Iterator[bytes]:  # no content-length: counted as it arrives
        yield b'{"input": "'
        for _ in range(100):
            yield b"a" * 4096
        yield b'"}'

    streamed = httpx.post(
        small.base + "/v1/audio/speech", content=chunked(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413 and streamed.headers["connection"] == "close"


def test_kokoro(server: RunningServer) -> None:
    response = speech(server, voice=KOKORO, response_format="pcm", sample_rate=24000)
    assert response.status_code == 200 and response.headers["x-voice"] == KOKORO
    assert 1.5 < pcm_seconds(response.content, 24000) < 4.5 and pcm_rms(response.content) > 0.01


def test_auth_keys_and_jwt(make_server: ServerMaker) -> None:
    import jwt

    secret = "test-secret-test-secret-test-secret!"
    secured = make_server(api_keys=["key-1"], jwt_secret=secret)
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


def test_rate_limit(make_server: ServerMaker) -> None:
    limited = make_server(rate_limit_per_minute=2)
    statuses = [httpx.get(limited.base + "/v1/voices").status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    refused = httpx.get(limited.base + "/v1/voices")
    assert refused.json()["error"]["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1
    # a wrong key spends the address's share as well: guessing keys is limited like any other traffic
    guessed = make_server(rate_limit_per_minute=2, api_keys=["right"])
    wrong = {"Authorization": "Bearer wrong"}
    statuses = [httpx.get(guessed.base + "/v1/voices", headers=wrong).status_code for _ in range(3)]
    assert statuses == [401, 401, 429]


def test_queue_over_capacity_and_disconnect_frees_the_stream(make_server: ServerMaker) -> None:
    busy = make_server(max_streams=1, max_queue=1, queue_timeout_s=20)  # waits out a busy machine's slow steps
    queued: list[httpx.Response] = []
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST", busy.base + "/v1/audio/speech", json={"input": LONG, "voice": PIPER, "response_format": "pcm"}
        ) as response,
    ):
        pieces = response.iter_raw()  # keep the iterator: dropping it closes the response
        next(pieces)
        assert busy.metric("voxserve_active_streams") == 1.0
        waiter = threading.Thread(target=lambda: queued.append(speech(busy)))
        waiter.start()
        deadline = time.monotonic() + 5
        while busy.metric("voxserve_queue_depth") != 1.0:
            assert time.monotonic() < deadline, "second request not queued"
            time.sleep(0.02)
        refused = speech(busy)  # stream cap and queue both full
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "overloaded"
        assert int(refused.headers["retry-after"]) >= 1
    # the first client went away mid-stream: its slot goes to the queued request
    waiter.join(20)
    assert queued and queued[0].status_code == 200 and len(queued[0].content) > 10000
    deadline = time.monotonic() + 3
    while busy.metric("voxserve_active_streams") != 0.0:
        assert time.monotonic() < deadline, "stream still active after client disconnect"
        time.sleep(0.05)
    assert not busy.state.service._live
    metrics = httpx.get(busy.base + "/metrics").text
    assert 'voxserve_requests_total{route="/v1/audio/speech",status="503",transport="http"} 1.0' in metrics
    assert 'voxserve_requests_total{route="/v1/audio/speech",status="200",transport="http"} 2.0' in metrics
    assert (
        'voxserve_time_to_first_audio_seconds_count{engine="piper",transport="http",voice="en_US-joe-medium"} 2.0'
        in metrics
    )


def test_cors(make_server: ServerMaker) -> None:
    app = make_server(cors_origins=["https://app.example"])
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


def test_access_log_is_json_without_text(make_server: ServerMaker, caplog: pytest.LogCaptureFixture) -> None:
    secret_text = "My account number is 12345."
    quiet = make_server()
    loud = make_server(log_text=True)
    with caplog.at_level(logging.INFO, logger="voxserve.access"):
        for running in (quiet, loud):
            assert speech(running, input=secret_text).status_code == 200
        deadline = time.monotonic() + 2  # the request line is written once the response has fully gone out
        while sum('"event": "http", "method": "POST"' in r.getMessage() for r in caplog.records) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "voxserve.access"]
    utterances = [line for line in lines if line["event"] == "utterance"]
    requests = [line for line in lines if line["event"] == "http" and line["path"] == "/v1/audio/speech"]
    assert len(utterances) == 2 and len(requests) == 2
    assert "text" not in utterances[0] and utterances[1]["text"] == secret_text
    assert utterances[0]["chars"] == len(secret_text) and utterances[0]["status"] == "ok"
    assert all(secret_text not in json.dumps(line) for line in requests)
    assert all(len(line["request_id"]) == 32 for line in requests)


def test_every_response_carries_a_request_id(server: RunningServer) -> None:
    """A client's plain ``X-Request-Id`` comes back as it was sent; otherwise, or when it is not a plain
    token (a header that would forge log lines), the server names the request with a new one."""
    given = httpx.get(server.base + "/v1/voices", headers={"X-Request-Id": "agent-7:turn-3"})
    assert given.headers["x-request-id"] == "agent-7:turn-3"
    refused = speech(server, input="", voice=PIPER)  # an error carries one too
    made = httpx.get(server.base + "/healthz", headers={"X-Request-Id": 'x", "status": 200'})
    ids = {refused.headers["x-request-id"], made.headers["x-request-id"]}
    assert refused.status_code == 400 and len(ids) == 2 and all(len(i) == 32 and i.isalnum() for i in ids)
