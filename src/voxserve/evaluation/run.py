"""The evaluation's measurements, sentence by sentence, and their summary per voice."""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from voxserve.benchmark import corpus
from voxserve.evaluation import asr
from voxserve.evaluation.fidelity import SeamStats, dnsmos, pesq_stoi, seams
from voxserve.evaluation.synth import Synthesis, Synthesizer
from voxserve.text.languages import KOKORO_PREFIX_LANG

# language → (text set, voices evaluated by default); English runs on both engines
DEFAULT_VOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "en": ("en", ("af_heart", "en_US-joe-medium")),
    "zh": ("zh", ("zf_xiaobei",)),
    "ja": ("ja", ("jf_alpha",)),
    "fr": ("fr", ("ff_siwis",)),
    "es": ("es", ("ef_dora",)),
    "it": ("it", ("if_sara",)),
    "pt": ("pt", ("pf_dora",)),
}


@dataclass(frozen=True)
class SentenceResult:
    language: str
    voice: str
    engine: str
    text: str
    heard: str
    error_rate: float  # WER for English, CER otherwise
    audio_s: float
    whole_audio_s: float
    pesq_wb: float | None  # streamed against sentence mode
    stoi: float | None
    window_pesq_wb: float | None  # Kokoro: one front decoded in windows against decoded whole
    window_stoi: float | None
    seams: SeamStats


@dataclass(frozen=True)
class VoiceSummary:
    language: str
    voice: str
    engine: str
    metric: str
    sentences: int
    error_rate: float
    pesq_median: float | None
    pesq_min: float | None
    stoi_median: float | None
    stoi_min: float | None
    window_pesq_median: float | None
    window_stoi_median: float | None
    dnsmos_ovrl: float | None
    joins: int
    clicks: int
    seam_median_ratio: float | None
    baseline_median_ratio: float | None


def summarize(results: list[SentenceResult], naturalness: dict[str, dict[str, float]]) -> list[VoiceSummary]:
    """Per voice; ``naturalness`` holds each voice's DNSMOS scores (absent when not measured)."""
    rows = []
    for voice in dict.fromkeys(r.voice for r in results):
        mine = [r for r in results if r.voice == voice]
        pesqs = [r.pesq_wb for r in mine if r.pesq_wb is not None]
        stois = [r.stoi for r in mine if r.stoi is not None]
        wpesq = [r.window_pesq_wb for r in mine if r.window_pesq_wb is not None]
        wstoi = [r.window_stoi for r in mine if r.window_stoi is not None]
        seam = [r.seams.median_ratio for r in mine if r.seams.median_ratio is not None]
        base = [r.seams.baseline_median_ratio for r in mine if r.seams.baseline_median_ratio is not None]
        rows.append(
            VoiceSummary(
                language=mine[0].language,
                voice=voice,
                engine=mine[0].engine,
                metric="WER" if mine[0].language == "en" else "CER",
                sentences=len(mine),
                error_rate=statistics.mean(r.error_rate for r in mine),
                pesq_median=statistics.median(pesqs) if pesqs else None,
                pesq_min=min(pesqs) if pesqs else None,
                stoi_median=statistics.median(stois) if stois else None,
                stoi_min=min(stois) if stois else None,
                window_pesq_median=statistics.median(wpesq) if wpesq else None,
                window_stoi_median=statistics.median(wstoi) if wstoi else None,
                dnsmos_ovrl=naturalness[voice]["ovrl_mos"] if voice in naturalness else None,
                joins=sum(r.seams.joins for r in mine),
                clicks=sum(r.seams.clicks for r in mine),
                seam_median_ratio=statistics.median(seam) if seam else None,
                baseline_median_ratio=statistics.median(base) if base else None,
            )
        )
    return rows


@dataclass
class Evaluation:
    """Runs the measurements; Whisper models are loaded once, when first needed."""

    synthesizer: Synthesizer
    naturalness: bool = True
    quiet: bool = False
    naturalness_scores: dict[str, dict[str, float]] = field(default_factory=dict)
    _whisper: dict[str, Any] = field(default_factory=dict)

    def _asr(self, language: str) -> Any:
        name = "tiny.en" if language == "en" else "base"
        if name not in self._whisper:
            self._whisper[name] = asr.load_whisper(name)  # type: ignore[arg-type]
        return self._whisper[name]

    def sentence(self, language: str, voice: str, engine: str, text: str) -> tuple[SentenceResult, Synthesis]:
        """One sentence's scores, and its streamed audio."""
        streamed = self.synthesizer.speak(text, voice)
        whole = self.synthesizer.speak(text, voice, whole=True)
        rate = streamed.sample_rate
        heard = asr.transcribe(self._asr(language), streamed.samples, rate, language)
        error = asr.wer(text, heard) if language == "en" else asr.cer(text, heard, language)
        scores: tuple[float | None, float | None] = (None, None)
        if len(streamed.samples) and len(whole.samples):
            scores = pesq_stoi(whole.samples, streamed.samples, rate)
        windowed: tuple[float | None, float | None] = (None, None)
        if engine == "kokoro":
            reference, test = self.synthesizer.kokoro_windows(text, voice, KOKORO_PREFIX_LANG[voice[0]])
            windowed = pesq_stoi(reference, test, rate)
        result = SentenceResult(
            language=language,
            voice=voice,
            engine=engine,
            text=text,
            heard=heard,
            error_rate=error,
            audio_s=len(streamed.samples) / rate,
            whole_audio_s=len(whole.samples) / rate,
            pesq_wb=scores[0],
            stoi=scores[1],
            window_pesq_wb=windowed[0],
            window_stoi=windowed[1],
            seams=seams(np.asarray(streamed.samples), streamed.joins, rate),
        )
        return result, streamed

    def language(self, language: str, voices: tuple[str, ...], count: int) -> list[SentenceResult]:
        set_name, _ = DEFAULT_VOICES[language]
        texts = corpus.load(set_name)[:count]
        engines = self.synthesizer.voices()
        results = []
        for voice in voices:
            clips: list[Synthesis] = []
            for k, text in enumerate(texts, 1):
                if not self.quiet:
                    print(f"\reval {language} {voice}: {k}/{len(texts)}", end="", file=sys.stderr, flush=True)
                result, streamed = self.sentence(language, voice, engines[voice], text)
                results.append(result)
                clips.append(streamed)
            if self.naturalness and clips:
                self.naturalness_scores[voice] = _naturalness(clips)
            if not self.quiet:
                print(file=sys.stderr)
        return results


def _naturalness(clips: list[Synthesis]) -> dict[str, float]:
    """DNSMOS of a voice's sentences played one after another, 0.3 s apart: one long clip scores in
    far fewer model runs than each short sentence (which DNSMOS repeats to fill its 9 s window)."""
    rate = clips[0].sample_rate
    gap = np.zeros(int(0.3 * rate), dtype=np.float32)
    joined = np.concatenate([piece for clip in clips for piece in (clip.samples, gap)])
    return dnsmos(joined, rate)
