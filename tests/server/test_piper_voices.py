"""Piper voices placed under MODEL_PATH: listed with their language and speakers, spoken over HTTP,
loaded on first use and unloaded least recently used beyond the memory budget. The voices are joe's
graph under other names, languages and speaker maps (made locally: no network)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
import onnx
import pytest

from voxserve.engines.onnx import LazySession, OnnxSession, SessionFactory
from voxserve.engines.registry import EngineLoad
from voxserve.engines.windowing import WindowConfig
from voxserve.models import ModelStore
from voxserve.models.piper_catalog import discover
from voxserve.piper_voices import PiperLibrary
from voxserve.tuning import Tuning

from .audio_util import pcm_rms
from .support import RunningServer, server_settings

if TYPE_CHECKING:
    from tests.conftest import PiperVoiceMaker

GERMAN = "de_DE-testvoice-medium"
BRITISH = "en_GB-second-medium"
FRENCH = "my-french-voice"  # any file name: the language comes from the config
KOREAN = "ko_KR-fixture-medium"
LATENT_ELSEWHERE = "/flow/latent_output_0"


@pytest.fixture(scope="module")
def model_path(
    tmp_path_factory: pytest.TempPathFactory, make_piper_voice: PiperVoiceMaker, model_store: ModelStore
) -> Path:
    folder = tmp_path_factory.mktemp("model_path")
    make_piper_voice(folder, GERMAN, espeak="de", speakers={"anna": 0, "ben": 1})
    make_piper_voice(folder / "more", BRITISH, espeak="en-gb")
    make_piper_voice(folder / "more", FRENCH, espeak="fr-fr", language="fr_FR")
    # Korean: joe's graph (it will sound wrong) with a Korean config whose phoneme map differs from joe's
    joe = json.loads(model_store.piper_config().read_text())["phoneme_id_map"]
    make_piper_voice(folder, KOREAN, espeak="ko", phoneme_ids={"ɐ": joe["a"], "a": joe["ɐ"]})
    return folder


@pytest.fixture(scope="module")
def server(model_path: Path) -> Iterator[RunningServer]:
    # a budget smaller than three of joe's graphs: the third voice loaded unloads the first
    running = RunningServer(server_settings(model_path=model_path, piper_memory_mb=180, warm_languages="none"))
    yield running
    running.stop()


def speak(server: RunningServer, voice: str | None, text: str) -> httpx.Response:
    body = {"input": text, "response_format": "pcm", **({"voice": voice} if voice else {})}
    return httpx.post(server.base + "/v1/audio/speech", json=body, timeout=60)


@pytest.mark.e2e
def test_voices_under_model_path_are_listed_with_language_and_speakers(server: RunningServer) -> None:
    listed = {v["id"]: v for v in httpx.get(server.base + "/v1/voices", timeout=10).json()["data"]}
    assert {f"{GERMAN}@anna", f"{GERMAN}@ben", BRITISH, FRENCH, "en_US-joe-medium"} <= set(listed)
    assert GERMAN not in listed  # a multi-speaker model is listed per speaker
    assert (listed[f"{GERMAN}@ben"]["lang"], listed[f"{GERMAN}@ben"]["engine"]) == ("de", "piper")
    assert listed[BRITISH]["lang"] == "en-gb" and listed[FRENCH]["lang"] == "fr"


@pytest.mark.e2e
def test_voices_load_on_use_stream_in_windows_and_unload_least_recently_used(server: RunningServer) -> None:
    library = server.state.service.runtime.piper_library
    assert library.loaded_ids == []  # nothing loaded until a request uses a voice
    german = speak(server, f"{GERMAN}@ben", "Guten Morgen, wie geht es dir heute?")
    assert german.status_code == 200 and pcm_rms(german.content) > 0.01
    german_engine = library.loaded(GERMAN)
    assert german_engine.windowed  # joe's structure: split graphs and windowed decoding
    whole = german_engine.session  # the whole graph, which windowed speech never runs: not loaded
    assert isinstance(whole, LazySession) and not whole.loaded
    assert speak(server, BRITISH, "Good morning, how are you today?").status_code == 200
    assert speak(server, FRENCH, "Bonjour, comment allez-vous?").status_code == 200
    assert library.loaded_ids[-1] == FRENCH and GERMAN not in library.loaded_ids
    assert library.loaded_bytes <= library.budget_bytes or library.loaded_ids == [FRENCH]  # one may exceed it
    again = speak(server, f"{GERMAN}@anna", "Noch einmal, bitte.")  # loaded again when asked for
    assert again.status_code == 200 and library.loaded_ids[-1] == GERMAN
    refused = speak(server, f"{GERMAN}@carla", "Hallo.")
    assert refused.status_code == 404 or refused.json()["error"]["code"] == "unknown_voice"
    japanese = speak(server, f"{GERMAN}@anna", "今日はいい天気です。")
    assert japanese.status_code == 400 and japanese.json()["error"]["code"] == "unsupported_language"


class FeedRecorder:
    """Stands in front of an ONNX session to keep what each call was fed (the session still runs)."""

    def __init__(self, session: OnnxSession) -> None:
        self._session = session
        self.feeds: list[dict[str, np.ndarray]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._session, name)

    def run(self, outputs: Sequence[str] | None, feed: dict[str, np.ndarray], *args: Any) -> object:
        self.feeds.append(feed)
        return self._session.run(outputs, feed, *args)


@pytest.mark.e2e
def test_korean_text_reaches_a_korean_voice_as_its_own_phoneme_ids(server: RunningServer) -> None:
    text = "사과 3개 주세요."
    first = speak(server, None, text)  # no voice: the Hangul picks the Korean voice
    assert first.status_code == 200 and first.headers["x-voice"] == KOREAN and pcm_rms(first.content) > 0.01
    runtime = server.state.service.runtime
    engine = runtime.piper_library.loaded(KOREAN)
    recorder = FeedRecorder(engine._streamer.front_session)  # the windowed front: where ids enter the graph
    engine._streamer.front_session = recorder
    assert speak(server, KOREAN, text).status_code == 200
    (segment,) = runtime.frontend.phonemize(text, "ko", "espeak")
    assert segment.phonemes.startswith("sˈɐqwɐ sˈe ɡˈɛ")  # 3개 read 세 개 (native), by espeak-ng's Korean
    ids = recorder.feeds[0]["input"].reshape(-1).tolist()
    assert ids == engine.phoneme_ids(segment.phonemes)
    korean_map = engine.config.phoneme_id_map
    assert (
        korean_map["ɐ"][0] in ids
        and korean_map["ɐ"] != json.loads(runtime.store.piper_config().read_text())["phoneme_id_map"]["ɐ"]
    )  # the voice's own map, not joe's


@pytest.mark.e2e
def test_a_graph_without_joes_structure_falls_back_to_sentence_mode(
    tmp_path: Path,
    make_piper_voice: PiperVoiceMaker,
    model_store: ModelStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    linked = make_piper_voice(tmp_path / "odd", "it_IT-other-medium", espeak="it")
    model = onnx.load(str(linked.resolve()))
    for node in model.graph.node:  # another export: the decoder's input tensor has another name
        node.input[:] = [LATENT_ELSEWHERE if name == "/Mul_7_output_0" else name for name in node.input]
        node.output[:] = [LATENT_ELSEWHERE if name == "/Mul_7_output_0" else name for name in node.output]
    linked.unlink()
    onnx.save(model, str(linked))
    load = EngineLoad(model_store, SessionFactory(["CPUExecutionProvider"], 1), Tuning(), WindowConfig())
    library = PiperLibrary(discover(tmp_path / "odd"), load, split_root=tmp_path / "split", budget_bytes=1 << 30)
    voice = library.engines["it_IT-other-medium"]
    with caplog.at_level(logging.WARNING, logger="voxserve.piper_voices"):
        pieces = list(voice.stream("bwɔnˈdʒorno", "it_IT-other-medium", first_window_s=0.2))
    assert len(pieces) == 1 and np.sqrt(np.mean(pieces[0].samples ** 2)) > 0.01  # one call for the sentence
    assert any("lacks the latent" in r.message and "one sentence per model call" in r.message for r in caplog.records)
    assert not voice.windowed and not (tmp_path / "split").exists()
