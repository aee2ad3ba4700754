"""The request policy alone (no models): how a request's voice, language and options resolve, and the
errors that say what to fix. The transports' own tests check the same rules over the wire."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from voxserve.errors import InputTooLarge, InvalidInput, UnknownVoice, UnsupportedLanguage
from voxserve.limits import check_input_length, check_speed
from voxserve.policy import RequestPolicy, SpeechRequest, body_limit_bytes, engines_for, whole_file
from voxserve.settings import Settings
from voxserve.types import VoiceInfo

VOICES = [
    VoiceInfo("af_heart", "kokoro", "en-us", "female", 24000),
    VoiceInfo("af_bella", "kokoro", "en-us", "female", 24000),
    VoiceInfo("zf_xiaobei", "kokoro", "zh", "female", 24000),
    VoiceInfo("en_US-joe-medium", "piper", "en-us", "male", 22050),
]


@pytest.fixture()
def policy() -> RequestPolicy:
    return RequestPolicy(Settings(default_voice="af_heart", max_input_chars=40), VOICES)


def resolve(policy: RequestPolicy, **fields: Any) -> SpeechRequest:
    return policy.resolve(replace(SpeechRequest(text="Hello there."), **fields), needs_text=True)


def test_voice_ids_resolve_whatever_their_case_and_blends_get_a_canonical_id(policy: RequestPolicy) -> None:
    assert resolve(policy, voice="AF_HEART").voice == "af_heart"
    blended = resolve(policy, voice="AF_HEART:3+af_bella:1")
    assert blended.voice == "af_heart:0.75+af_bella:0.25"
    assert policy.voice(blended.voice).name == "blend"


def test_bad_voices_say_what_is_wrong(policy: RequestPolicy) -> None:
    with pytest.raises(UnknownVoice, match="unknown voice 'xx_nobody'"):
        resolve(policy, voice="xx_nobody")
    with pytest.raises(UnknownVoice, match="'af_nobody' in blend"):
        resolve(policy, voice="af_heart+af_nobody")
    with pytest.raises(UnknownVoice, match="bad voice blend"):
        resolve(policy, voice="af_heart:-1+af_bella")
    with pytest.raises(InvalidInput, match="only Kokoro voices can be blended"):
        resolve(policy, voice="af_heart:0.5+en_US-joe-medium:0.5")
    with pytest.raises(InvalidInput, match="at most 256 characters, got 50000") as refused:  # not echoed back
        resolve(policy, voice="x" * 50_000)
    assert len(str(refused.value)) < 200


def test_language_routes_by_script_and_piper_speaks_its_own_language_only(policy: RequestPolicy) -> None:
    routed = resolve(policy, voice=None, text="你好，世界。")
    assert (routed.voice, routed.lang) == ("zf_xiaobei", "zh")
    with pytest.raises(UnsupportedLanguage, match="speaks English only"):
        resolve(policy, voice="en_US-joe-medium", lang="fr")


def test_options_out_of_range_are_refused(policy: RequestPolicy) -> None:
    with pytest.raises(InvalidInput, match=r"speed must be between 0\.5 and 2\.0"):
        resolve(policy, speed=3.0)
    with pytest.raises(InvalidInput, match="sample_rate must be between 8000 and 48000"):
        resolve(policy, sample_rate=7999)
    with pytest.raises(InvalidInput, match="unsupported format 'wma'"):
        resolve(policy, format="wma")
    with pytest.raises(InvalidInput, match="input text is empty"):
        resolve(policy, text="   ")
    with pytest.raises(InputTooLarge, match="the limit is 40"):
        resolve(policy, text="x" * 41)
    assert resolve(policy, format="MP3", speed=2.0).format == "mp3"


def test_ssml_becomes_the_text_it_reads(policy: RequestPolicy) -> None:
    read = resolve(policy, text='<speak><prosody rate="150%">Hi there.</prosody></speak>')
    assert read.text.strip() == "Hi there." and read.speed == pytest.approx(1.5)
    with pytest.raises(InvalidInput, match="input_format"):
        resolve(policy, input_format="html")
    entities = '<?xml version="1.0"?><!DOCTYPE speak [<!ENTITY w "word word word ">]>'
    with pytest.raises(InputTooLarge, match="reads as 74 characters once its entities are expanded; the limit is 40"):
        resolve(policy, text=entities + "<speak>&w;&w;&w;&w;&w;</speak>", input_format="ssml")  # 99 sent


def test_the_deep_checks_say_what_the_policy_says() -> None:
    with pytest.raises(InvalidInput, match="speed must be between"):
        check_speed(0.1)
    with pytest.raises(InputTooLarge, match="the limit is 5"):
        check_input_length(6, 5)


def test_engines_to_load_whole_file_flac_and_the_body_limit() -> None:
    assert engines_for("af_heart") == ["kokoro"] and engines_for("auto") == ["kokoro"]
    assert engines_for("en_US-joe-medium") == ["piper"]
    assert engines_for("af_heart:0.5+en_US-joe-medium:0.5") == ["kokoro", "piper"]
    assert whole_file("FLAC") and not whole_file("mp3")
    assert body_limit_bytes(Settings(max_input_chars=10)) == 10 * 6 + 16 * 1024
