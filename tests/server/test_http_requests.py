"""What ``POST /v1/audio/speech`` refuses before it answers, and the voices and models it takes.

Real server, real Piper and Kokoro synthesis, ``httpx`` and the official ``openai`` client."""

from __future__ import annotations

import io
import time

import httpx
import numpy as np
import openai
import pytest
import soundfile

from .audio_util import pcm_rms
from .support import KOKORO, PIPER, SHORT, RunningServer, ServerMaker


def speech(server: RunningServer, **body: object) -> httpx.Response:
    return httpx.post(server.base + "/v1/audio/speech", json={"input": SHORT, **body}, timeout=60)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"voice": PIPER, "speed": 0.25}, "invalid_request"),  # OpenAI's range is wider than the models'
        ({"voice": KOKORO, "speed": 4.0}, "invalid_request"),
        ({"voice": KOKORO, "input": "😀🎉👍"}, "invalid_request"),  # nothing speakable
        ({"voice": PIPER, "input": "...!?"}, "invalid_request"),
        ({"voice": KOKORO, "input": "今天天气很好"}, "unsupported_language"),  # Mandarin for an English voice
        ({"voice": KOKORO, "model": "gpt-9000"}, "invalid_request"),
        ({"voice": KOKORO, "model": "piper"}, "invalid_request"),  # a Kokoro voice for the Piper model
        ({"voice": "af_heart:0.5+nobody:0.5"}, "unknown_voice"),
        ({"voice": f"{KOKORO}+{PIPER}"}, "invalid_request"),  # only Kokoro voices blend
    ],
)
def test_refused_before_any_audio(server: RunningServer, body: dict[str, object], code: str) -> None:
    """A request that can't be spoken gets a 4xx and a readable error, never a 200 cut off mid-body."""
    response = speech(server, response_format="wav", **body)
    assert response.status_code == 400, (response.status_code, response.content[:80])
    error = response.json()["error"]
    assert error["message"]
    assert error["code"] == code


def test_blends_and_engine_models(server: RunningServer) -> None:
    blend = speech(server, voice=f"{KOKORO}:0.7+af_bella:0.3", response_format="pcm")
    assert blend.status_code == 200 and pcm_rms(blend.content) > 0.01
    assert blend.headers["x-voice"] == f"{KOKORO}:0.7+af_bella:0.3"
    piper = speech(server, model="piper", response_format="pcm")  # no voice: the engine's voice
    assert piper.status_code == 200 and piper.headers["x-voice"] == PIPER
    client = openai.OpenAI(base_url=server.base + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="speed"):
        client.audio.speech.create(model="tts-1", voice="alloy", input="Too fast.", speed=4.0)
    assert server.metric("voxserve_active_streams") == 0.0


def test_unusable_bodies_and_paths_get_the_error_envelope(server: RunningServer) -> None:
    url = server.base + "/v1/audio/speech"
    broken = httpx.post(url, content=b'{"input": "Hi",', headers={"Content-Type": "application/json"})
    assert broken.status_code == 400 and "not valid JSON" in broken.json()["error"]["message"]
    plain = httpx.post(url, content=b"Hello there", headers={"Content-Type": "text/plain"})
    assert plain.status_code == 400 and "application/json" in plain.json()["error"]["message"]
    empty = httpx.post(url)
    assert empty.status_code == 400 and "missing" in empty.json()["error"]["message"]
    for unreadable in (b'{"input":"\xc3\x28"}', b'{"input":' + b"[" * 100_000 + b"]" * 100_000 + b"}"):
        refused = httpx.post(url, content=unreadable, headers={"Content-Type": "application/json"})
        assert refused.status_code == 400 and refused.json()["error"]["type"] == "InvalidInput", refused.text
        assert "UTF-8" in refused.json()["error"]["message"]
    deep = {"input": "<speak>" + "<p>" * 2000 + "Deep." + "</p>" * 2000 + "</speak>", "voice": PIPER}
    with httpx.Client() as client:  # one connection: a refused document must leave it open
        nested = client.post(url, json=deep)
        assert nested.status_code == 400 and "nested 2001 deep" in nested.json()["error"]["message"]
        assert client.post(url, json={"input": SHORT, "voice": PIPER, "response_format": "pcm"}).status_code == 200
    unknown = httpx.get(server.base + "/v1/no-such-thing")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    assert unknown.json()["error"]["type"] == "NotFound"
    wrong = httpx.delete(server.base + "/v1/models")
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"
    fetched = httpx.get(server.base + "/v1/audio/speech")  # POST-only: not mistaken for a missing page
    assert fetched.status_code == 405 and fetched.headers["allow"] == "OPTIONS, POST"
    assert fetched.json()["error"]["code"] == "method_not_allowed"
    headed = httpx.head(server.base + "/v1/audio/speech")  # HEAD goes where GET goes: 405, not the playground's 404
    assert headed.status_code == 405 and headed.headers["allow"] == "OPTIONS, POST"
    assert httpx.head(server.base + "/v1/voices").status_code == 200


def test_a_whole_text_is_not_held_to_real_time(server: RunningServer) -> None:
    """The text is all there: the reply comes as fast as it is made, not at playback speed (a client
    saving a file should not wait the length of the speech)."""
    text = " ".join(["This sentence makes the reply long enough to tell the two apart."] * 6)
    start = time.perf_counter()
    response = speech(server, voice=PIPER, input=text, response_format="pcm", sample_rate=22050)
    wall = time.perf_counter() - start
    audio_s = len(response.content) / 2 / 22050
    assert response.status_code == 200 and audio_s > 20
    assert wall < audio_s / 2, (wall, audio_s)


def test_flac_downloads_are_whole_files_that_soundfile_reads(server: RunningServer) -> None:
    response = speech(server, voice=PIPER, response_format="flac")
    assert response.status_code == 200
    audio, rate = soundfile.read(io.BytesIO(response.content))  # a streamed header ("length unknown") fails here
    assert rate == 22050 and 1.5 < len(audio) / rate < 4.5 and float(np.sqrt(np.mean(audio**2))) > 0.01


def test_voice_ids_are_found_whatever_their_case_and_timestamps_need_sse(server: RunningServer) -> None:
    loud = speech(server, voice=" AF_HEART ", response_format="pcm")
    assert loud.status_code == 200 and loud.headers["x-voice"] == KOKORO
    blend = speech(server, voice="AF_Heart+af_bella", response_format="pcm")
    assert blend.status_code == 200 and blend.headers["x-voice"] == f"{KOKORO}:0.5+af_bella:0.5"
    refused = speech(server, voice=PIPER, timestamps=True)  # would be silently dropped in a plain audio stream
    assert refused.status_code == 400 and "stream_format" in refused.json()["error"]["message"]


def test_text_goes_to_a_voice_of_its_language_or_is_refused_by_name(make_server: ServerMaker) -> None:
    """No voice (or 'auto'): the text's script picks the voice. A named voice that cannot read the text is
    refused with the language named, unless the operator mapped that language to a voice."""
    server = make_server(language_voices="ja=jf_alpha")
    mixed = speech(server, input="我今天用iPhone打电话给John，他说OK，明天见。", response_format="pcm")
    assert mixed.status_code == 200 and mixed.headers["x-voice"].startswith("z") and pcm_rms(mixed.content) > 0.01
    mapped = speech(server, voice=KOKORO, input="今日は2024年3月5日です。", response_format="pcm")
    assert mapped.status_code == 200 and mapped.headers["x-voice"] == "jf_alpha"
    for body, words in [
        ({"voice": KOKORO, "input": "مرحبا بالعالم، كيف حالك؟"}, ["Arabic", "no Arabic voice installed"]),
        ({"input": "안녕하세요, 만나서 반갑습니다."}, ["Korean", "no Korean voice installed", "MODEL_PATH"]),
        ({"voice": KOKORO, "input": "我们明天见。"}, ["Chinese", "'auto'"]),
    ]:
        refused = speech(server, response_format="pcm", **body)
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert error["code"] == "unsupported_language" and all(w in error["message"] for w in words), error
    # an engine model routes by the text's language as well: 'auto', and no voice or an OpenAI voice name
    # when the default voice is of that engine; a route that leaves the engine is refused
    routed = speech(server, model="kokoro", voice="auto", input="我们明天见。", response_format="pcm")
    assert routed.status_code == 200 and routed.headers["x-voice"].startswith("z"), routed.text
    other = speech(server, model="piper", voice="auto", input="我们明天见。", response_format="pcm")
    assert other.status_code == 400 and "not a piper voice" in other.json()["error"]["message"], other.text
    kokoro_default = make_server(default_voice=KOKORO)
    for voice in ("alloy", None):
        routed = speech(kokoro_default, model="kokoro", voice=voice, input="我们明天见。", response_format="pcm")
        assert routed.status_code == 200 and routed.headers["x-voice"].startswith("z"), (voice, routed.text)
