"""KokoroEngine with the real int8 model (phonemes given directly, no text frontend)."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.engines.kokoro import KokoroEngine, split_phonemes
from voxserve.errors import InvalidInput, UnknownVoice
from voxserve.runtime import Runtime

HELP = "ʃˈʊɹ, ˌI kæn hˈɛlp wɪð ðˈæt."


@pytest.fixture(scope="module")
def kokoro(runtime: Runtime) -> KokoroEngine:
    engine = runtime.engines["kokoro"]
    assert isinstance(engine, KokoroEngine)
    return engine


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def test_all_54_voices_listed_with_language_and_gender(kokoro: KokoroEngine) -> None:
    voices = kokoro.voices()
    assert len(voices) == 54
    langs = {v.lang for v in voices}
    assert langs == {"en-us", "en-gb", "es", "fr", "hi", "it", "ja", "pt-br", "zh"}
    assert {v.gender for v in voices} == {"female", "male"}
    assert all(v.sample_rate == 24_000 for v in voices)


def test_synthesizes_speech_of_plausible_length_and_level(kokoro: KokoroEngine) -> None:
    out = kokoro.synthesize(HELP, "af_heart")
    assert out.sample_rate == 24_000
    assert out.samples.dtype == np.float32
    seconds = len(out.samples) / 24_000
    assert 1.2 < seconds < 3.5
    assert 0.02 < rms(out.samples) < 0.5
    assert np.abs(out.samples).max() <= 1.5


def test_speed_changes_duration(kokoro: KokoroEngine) -> None:
    normal = len(kokoro.synthesize(HELP, "af_heart", 1.0).samples)
    fast = len(kokoro.synthesize(HELP, "af_heart", 2.0).samples)
    slow = len(kokoro.synthesize(HELP, "af_heart", 0.5).samples)
    assert 0.4 < fast / normal < 0.7
    assert 1.6 < slow / normal < 2.4


@pytest.mark.parametrize("speed", [0.0, 0.49, 2.01, 10.0])
def test_speed_out_of_range_is_rejected(kokoro: KokoroEngine, speed: float) -> None:
    with pytest.raises(InvalidInput, match="speed"):
        kokoro.synthesize(HELP, "af_heart", speed)


def test_style_row_follows_token_count_and_voices_differ(kokoro: KokoroEngine) -> None:
    table = kokoro.style_tables.table("af_heart")
    assert table.shape == (510, 256)
    assert np.array_equal(kokoro.style_tables.style("af_heart", 10), table[9:10])
    a = kokoro.synthesize(HELP, "af_heart").samples
    b = kokoro.synthesize(HELP, "am_adam").samples
    assert len(a) != len(b) or not np.allclose(a, b)


def test_voice_blend_is_the_weighted_mean(kokoro: KokoroEngine) -> None:
    heart = kokoro.style_tables.table("af_heart")
    bella = kokoro.style_tables.table("af_bella")
    mixed = kokoro.style_tables.table("af_heart:0.7+af_bella:0.3")
    assert np.allclose(mixed, 0.7 * heart + 0.3 * bella, atol=1e-6)
    out = kokoro.synthesize(HELP, "af_heart:0.7+af_bella:0.3")
    assert rms(out.samples) > 0.02


@pytest.mark.parametrize("voice", ["nope", "af_heart:abc", "af_heart+", "af_heart:-1", "zz_unknown"])
def test_bad_voices_give_clear_errors(kokoro: KokoroEngine, voice: str) -> None:
    with pytest.raises(UnknownVoice):
        kokoro.check_voice(voice)


def test_symbols_outside_vocabulary_are_refused_not_dropped(kokoro: KokoroEngine) -> None:
    assert kokoro.unknown_symbols("hˈɛlp☃") == {"☃"}
    with pytest.raises(InvalidInput, match="☃"):
        kokoro.synthesize("hˈɛlp☃", "af_heart")


def test_split_prefers_phrase_boundaries() -> None:
    text = ", ".join(["hˈɛlp wɪð ðˈæt"] * 60)
    pieces = split_phonemes(text, 100)
    assert all(len(p) <= 100 for p in pieces)
    assert all(p.endswith(",") for p in pieces[:-1])
    assert "".join(p.replace(" ", "") for p in pieces) == text.replace(" ", "")


def test_input_longer_than_the_window_is_split_and_fully_spoken(kokoro: KokoroEngine) -> None:
    long = " ".join([HELP] * 19)  # ~570 symbols > 510; at double speed to keep the test short
    assert len(long) > 510
    pieces = list(kokoro.stream(long, "af_heart", 2.0))
    assert sum(p.first for p in pieces) == 2  # two model inputs, each decoded in one or more windows
    assert pieces[0].first and pieces[-1].last
    # the first input's last piece says another input follows; the call's last piece says none does
    assert [p.more_runs for p in pieces if p.last] == [True, False]
    assert not any(p.more_runs for p in pieces if not p.last)
    single = len(kokoro.synthesize(HELP, "af_heart", 2.0).samples)
    total = sum(len(p.samples) for p in pieces)
    assert total > 19 * single * 0.6
