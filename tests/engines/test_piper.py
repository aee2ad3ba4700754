"""PiperEngine with the real en_US-joe-medium voice and our own phoneme-id mapping."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.engines.piper import PiperEngine
from voxserve.errors import InvalidInput, UnknownVoice
from voxserve.runtime import Runtime

HELLO = "həlˈoʊ ðˈɛɹ, hˌaʊ kæn aɪ hˈɛlp juː tədˈeɪ?"


@pytest.fixture(scope="module")
def piper(runtime: Runtime) -> PiperEngine:
    engine = runtime.engines["piper"]
    assert isinstance(engine, PiperEngine)
    return engine


def test_voice_and_config(piper: PiperEngine) -> None:
    (voice,) = piper.voices()
    assert voice.id == "en_US-joe-medium"
    assert voice.sample_rate == 22_050 == piper.sample_rate
    assert voice.lang == "en-us"


def test_phoneme_ids_interleave_pads_between_bos_and_eos(piper: PiperEngine) -> None:
    id_map = piper.config.phoneme_id_map
    ids = piper.phoneme_ids("hə")
    assert ids == [*id_map["^"], *id_map["_"], *id_map["h"], *id_map["_"], *id_map["ə"], *id_map["_"], *id_map["$"]]


def test_synthesizes_plausible_speech(piper: PiperEngine) -> None:
    out = piper.synthesize(HELLO, "en_US-joe-medium")
    seconds = len(out.samples) / out.sample_rate
    assert 1.3 < seconds < 3.5
    assert float(np.sqrt(np.mean(out.samples**2))) > 0.02


def test_speed_scales_length(piper: PiperEngine) -> None:
    normal = np.mean([len(piper.synthesize(HELLO, "en_US-joe-medium", 1.0).samples) for _ in range(3)])
    fast = np.mean([len(piper.synthesize(HELLO, "en_US-joe-medium", 2.0).samples) for _ in range(3)])
    assert 0.35 < fast / normal < 0.7


def test_errors(piper: PiperEngine) -> None:
    with pytest.raises(UnknownVoice):
        piper.synthesize(HELLO, "af_heart")
    with pytest.raises(InvalidInput, match="speed"):
        piper.synthesize(HELLO, "en_US-joe-medium", 0.1)
    with pytest.raises(InvalidInput, match="alphabet"):
        piper.synthesize("hə☃", "en_US-joe-medium")
    with pytest.raises(InvalidInput, match="empty"):
        piper.synthesize("   ", "en_US-joe-medium")


def test_the_whole_sentence_path_stops_for_a_cancelled_stream(piper: PiperEngine) -> None:
    """Sentence mode (and voices whose graph cannot be split) make one call per sentence: a cancelled
    stream's call fails as cancelled instead of running to the end."""
    from voxserve.engines.onnx import RunControl
    from voxserve.errors import Cancelled

    control = RunControl()
    control.cancel()
    with pytest.raises(Cancelled):
        piper.synthesize(HELLO, "en_US-joe-medium", control=control)
    assert len(piper.synthesize(HELLO, "en_US-joe-medium", control=RunControl()).samples) > 0
