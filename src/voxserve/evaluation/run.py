"""The evaluation's measurements, sentence by sentence, and their summary per voice."""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from voxserve.benchmark import corpus
from voxserve.engines.voices import KOKORO_LANG_BY_PREFIX
from voxserve.evaluation import asr
from voxserve.evaluation import peers as peer_libs
from voxserve.evaluation.fidelity import SeamStats, dnsmos, pesq_stoi, seams, trim_silence
from voxserve.evaluation.progress import Progress
from voxserve.evaluation.synth import Synthesis, Synthesizer
from voxserve.text.languages import lang_for_voice

# language → (text set, voices evaluated by default); English runs on both engines
DEFAULT_VOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "en": ("en", ("af_heart", "en_US-joe-medium")),
    "zh": ("zh", ("zf_xiaobei",)),
    "ja": ("ja", ("jf_alpha",)),
    "fr": ("fr", ("ff_siwis",)),
    "es": ("es", ("ef_dora",)),
    "it": ("it", ("if_sara",)),
    "pt": ("pt", ("pf_dora",)),
    "hi": ("hi", ("hf_alpha",)),
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


@dataclass(frozen=True)
class PeerResult:
    """One sentence through a peer library."""

    language: str
    peer: str
    voice: str
    text: str
    heard: str
    error_rate: float
    audio_s: float
    # kokoro-onnx only: voxserve's windowed stream of the same phonemes scored against the peer's
    # output for them (the library's one-call synthesis is the common reference)
    voxserve_pesq_wb: float | None = None
    voxserve_stoi: float | None = None


@dataclass(frozen=True)
class PeerSummary:
    language: str
    peer: str
    voice: str
    metric: str
    sentences: int
    error_rate: float
    dnsmos_ovrl: float | None
    voxserve_pesq_median: float | None
    voxserve_pesq_min: float | None
    voxserve_stoi_median: float | None
    voxserve_stoi_min: float | None


def summarize_peers(results: list[PeerResult], naturalness: dict[str, dict[str, float]]) -> list[PeerSummary]:
    """Per (language, peer); ``naturalness`` is keyed ``"<peer> <voice>"``."""
    rows = []
    for key in dict.fromkeys((r.language, r.peer, r.voice) for r in results):
        mine = [r for r in results if (r.language, r.peer, r.voice) == key]
        pesqs = [r.voxserve_pesq_wb for r in mine if r.voxserve_pesq_wb is not None]
        stois = [r.voxserve_stoi for r in mine if r.voxserve_stoi is not None]
        scores = naturalness.get(f"{key[1]} {key[2]}")
        rows.append(
            PeerSummary(
                language=key[0],
                peer=key[1],
                voice=key[2],
                metric="WER" if key[0] == "en" else "CER",
                sentences=len(mine),
                error_rate=statistics.mean(r.error_rate for r in mine),
                dnsmos_ovrl=scores["ovrl_mos"] if scores else None,
                voxserve_pesq_median=statistics.median(pesqs) if pesqs else None,
                voxserve_pesq_min=min(pesqs) if pesqs else None,
                voxserve_stoi_median=statistics.median(stois) if stois else None,
                voxserve_stoi_min=min(stois) if stois else None,
            )
        )
    return rows


def summarize(results: list[SentenceResult], naturalness: dict[str, dict[str, float]]) -> list[VoiceSummary]:
    """Per language and voice (a voice may speak several languages); ``naturalness`` holds the DNSMOS
    scores of each, keyed ``"<language> <voice>"`` (absent when not measured)."""
    rows = []
    for language, voice in dict.fromkeys((r.language, r.voice) for r in results):
        mine = [r for r in results if (r.language, r.voice) == (language, voice)]
        scores = naturalness.get(f"{language} {voice}")
        pesqs = [r.pesq_wb for r in mine if r.pesq_wb is not None]
        stois = [r.stoi for r in mine if r.stoi is not None]
        wpesq = [r.window_pesq_wb for r in mine if r.window_pesq_wb is not None]
        wstoi = [r.window_stoi for r in mine if r.window_stoi is not None]
        seam = [r.seams.median_ratio for r in mine if r.seams.median_ratio is not None]
        base = [r.seams.baseline_median_ratio for r in mine if r.seams.baseline_median_ratio is not None]
        rows.append(
            VoiceSummary(
                language=language,
                voice=voice,
                engine=mine[0].engine,
                metric="WER" if language == "en" else "CER",
                sentences=len(mine),
                error_rate=statistics.mean(r.error_rate for r in mine),
                pesq_median=statistics.median(pesqs) if pesqs else None,
                pesq_min=min(pesqs) if pesqs else None,
                stoi_median=statistics.median(stois) if stois else None,
                stoi_min=min(stois) if stois else None,
                window_pesq_median=statistics.median(wpesq) if wpesq else None,
                window_stoi_median=statistics.median(wstoi) if wstoi else None,
                dnsmos_ovrl=scores["ovrl_mos"] if scores else None,
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
    peers: tuple[str, ...] = ()
    peers_python: Path = peer_libs.DEFAULT_PEERS_PYTHON
    peer_results: list[PeerResult] = field(default_factory=list)
    peer_naturalness: dict[str, dict[str, float]] = field(default_factory=dict)
    peer_failures: list[str] = field(default_factory=list)  # peers that failed on a language, and why
    _whisper: dict[str, Any] = field(default_factory=dict)
    _windowed: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (voice, text) → stream

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
        heard, error = self._hear(language, text, streamed.samples, rate)
        scores: tuple[float | None, float | None] = (None, None)
        if engine != "piper" and len(streamed.samples) and len(whole.samples):  # Piper's draws never line up
            scores = pesq_stoi(whole.samples, streamed.samples, rate)
        windowed: tuple[float | None, float | None] = (None, None)
        if engine == "kokoro":
            reference, test = self.synthesizer.kokoro_windows(text, voice, KOKORO_LANG_BY_PREFIX[voice[0]])
            windowed = pesq_stoi(reference, test, rate)
            if "kokoro-onnx" in self.peers:
                self._windowed[(voice, text)] = test
        elif engine == "piper":
            windowed = pesq_stoi(*self.synthesizer.piper_windows(text, voice, lang_for_voice(voice)), rate)
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

    def _hear(self, language: str, text: str, samples: np.ndarray, rate: int) -> tuple[str, float]:
        """What Whisper hears, and its WER (English) or CER against ``text``."""
        heard = asr.transcribe(self._asr(language), samples, rate, language)
        return heard, asr.wer(text, heard) if language == "en" else asr.cer(text, heard, language)

    def language(self, language: str, voices: tuple[str, ...], count: int) -> list[SentenceResult]:
        set_name, _ = DEFAULT_VOICES[language]
        texts = corpus.load(set_name)[:count]
        engines = self.synthesizer.voices()
        results = []
        for voice in voices:
            clips: list[Synthesis] = []
            progress = Progress(f"eval {language} {voice}", len(texts), self.quiet)
            for k, text in enumerate(texts, 1):
                progress.step(k)
                result, streamed = self.sentence(language, voice, engines[voice], text)
                results.append(result)
                clips.append(streamed)
            if self.naturalness and clips:
                self.naturalness_scores[f"{language} {voice}"] = _naturalness(
                    [(c.samples, c.sample_rate) for c in clips]
                )
            progress.done()
        for peer in self.peers:
            if not peer_libs.supports(peer, language):
                if not self.quiet:
                    print(f"eval {language}: {peer} does not speak it; left out", file=sys.stderr)
                continue
            try:
                self._peer(language, peer, voices, engines, texts)
            except RuntimeError as exc:  # the peer's own failure: voxserve's scores and the other peers stand
                self.peer_failures.append(f"{language} {peer}: {exc}"[:500])
                print(f"eval {language}: {peer} failed, left out: {str(exc)[:300]}", file=sys.stderr)
        return results

    def _peer(
        self, language: str, peer: str, voices: tuple[str, ...], engines: dict[str, str], texts: list[str]
    ) -> None:
        """``texts`` through ``peer`` with the language's first voice of the peer's engine."""
        engine = "kokoro" if peer == "kokoro-onnx" else "piper"
        voice = next((v for v in voices if engines[v] == engine), None)
        if voice is None:
            return
        if not self.quiet:
            print(f"eval {language} {peer} {voice}: {len(texts)} sentences", file=sys.stderr, flush=True)
        store = self.synthesizer.streamed.store
        references: list[peer_libs.PeerAudio | None] = [None] * len(texts)
        if peer == "kokoro-onnx":
            lang = peer_libs.KOKORO_ONNX_LANG[language]
            phonemes = [self.synthesizer.kokoro_phonemes(t, KOKORO_LANG_BY_PREFIX[voice[0]]) for t in texts]
            items = [(t, voice, lang, False) for t in texts] + [(p, voice, lang, True) for p in phonemes]
            audio = peer_libs.kokoro_onnx(self.peers_python, store, items)
            clips, references = audio[: len(texts)], list(audio[len(texts) :])
        else:
            clips = peer_libs.piper_tts(self.peers_python, store, texts)
        for text, clip, ref in zip(texts, clips, references, strict=True):
            heard, error = self._hear(language, text, clip.samples, clip.sample_rate)
            scores: tuple[float | None, float | None] = (None, None)
            stream = self._windowed.get((voice, text))
            if ref is not None and stream is not None:
                rate = ref.sample_rate
                scores = pesq_stoi(trim_silence(ref.samples, rate), trim_silence(stream, rate), rate)
            self.peer_results.append(
                PeerResult(language, peer, voice, text, heard, error, len(clip.samples) / clip.sample_rate, *scores)
            )
        if self.naturalness and clips:
            self.peer_naturalness[f"{peer} {voice}"] = _naturalness([(c.samples, c.sample_rate) for c in clips])


def _naturalness(clips: list[tuple[np.ndarray, int]]) -> dict[str, float]:
    """DNSMOS of a voice's sentences (samples, rate) played one after another, 0.3 s apart: one long
    clip scores in far fewer model runs than each short sentence (which DNSMOS repeats to fill its 9 s
    window)."""
    rate = clips[0][1]
    gap = np.zeros(int(0.3 * rate), dtype=np.float32)
    joined = np.concatenate([piece for samples, _ in clips for piece in (np.asarray(samples, np.float32), gap)])
    return dnsmos(joined, rate)
