"""Fidelity of each Kokoro decoder precision (``VOXSERVE_PRECISION``) against the shipped model's output.

The reference is the shipped int8 graph decoding a sentence in one call. Every precision shares the
int8 front (text encoder, durations, F0), so each variant's audio lines up with the reference sample
for sample in time and only the decoder's arithmetic differs. Each variant is scored twice, PESQ-WB
and STOI: decoded *whole* (one call) and *streamed* (the server's windows of the same front).

Streams of every variant start from the same learned decoder statistics: the int8 model's, or those of
the variant a server here runs (:func:`_statistics`).
A variant that cannot run on this machine's providers (float16 convolutions have no CPU kernel in
some ONNX Runtime builds) is reported with the error instead of scores.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from voxserve.engines.onnx import resolve_providers
from voxserve.engines.stats_model import StatsRegression
from voxserve.engines.vocoder_stats import VoiceStatsBook
from voxserve.errors import ModelError
from voxserve.evaluation.fidelity import pesq_stoi
from voxserve.evaluation.kokoro_windows import KokoroWindows
from voxserve.evaluation.progress import Progress
from voxserve.models.graphs import PRECISIONS
from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.tuning import Tuning

VARIANTS = PRECISIONS  # int8-gemm too: the same audio as int8 wherever `auto` would choose it
RATE = 24_000


@dataclass(frozen=True)
class PrecisionRow:
    precision: str
    providers: str
    sentences: int
    whole_pesq_median: float | None = None
    whole_pesq_min: float | None = None
    whole_stoi_median: float | None = None
    whole_stoi_min: float | None = None
    streamed_pesq_median: float | None = None
    streamed_pesq_min: float | None = None
    streamed_stoi_median: float | None = None
    streamed_stoi_min: float | None = None
    error: str | None = None


def parse(names: str) -> tuple[str, ...]:
    """``int8,fp32`` → the variants; ``none`` → no comparison."""
    from voxserve.errors import InvalidInput

    wanted = tuple(dict.fromkeys(n.strip() for n in names.split(",") if n.strip()))
    if wanted in ((), ("none",)):
        return ()
    unknown = [n for n in wanted if n not in VARIANTS]
    if unknown:
        raise InvalidInput(f"unknown precision {unknown[0]!r}; choose from {', '.join(VARIANTS)} or none")
    return wanted


def _runtime(settings: Settings, precision: str) -> Runtime:
    variant = settings.model_copy(update={"engines": ["kokoro"], "precision": precision})
    runtime = Runtime(variant, Tuning(decode_mode="windowed"))
    runtime.load(warm=False)  # loads the decoder statistics an earlier start learned, learns none
    return runtime


def _row(
    precision: str, providers: str, whole: list[tuple[float, float]], streamed: list[tuple[float, float]]
) -> PrecisionRow:
    def stat(scores: list[tuple[float, float]], k: int) -> tuple[float, float]:
        values = [s[k] for s in scores]
        return statistics.median(values), min(values)

    (wp, wp_min), (ws, ws_min) = stat(whole, 0), stat(whole, 1)
    (sp, sp_min), (ss, ss_min) = stat(streamed, 0), stat(streamed, 1)
    return PrecisionRow(precision, providers, len(whole), wp, wp_min, ws, ws_min, sp, sp_min, ss, ss_min)


def _statistics(settings: Settings, reference: KokoroWindows, voice: str) -> tuple[VoiceStatsBook, StatsRegression]:
    """The learned decoder statistics every variant streams from: the int8 model's, or, where a server
    here runs another variant (``auto`` picks int8-gemm on CPUs where its matrix products pay), that
    variant's, since a server learns them only for the precision it runs. Without any, streamed scores
    say nothing of the arithmetic (a stream's first windows start blind), so they are asked for."""
    learned = _learned(reference, voice)
    if learned is None and settings.precision != "int8":
        runtime = _runtime(settings, settings.precision)
        try:
            learned = _learned(KokoroWindows(runtime), voice)
        finally:
            runtime.close()
    if learned is None:
        raise ModelError("no learned decoder statistics: start the server once (make serve) to learn them")
    return learned


def _learned(windows: KokoroWindows, voice: str) -> tuple[VoiceStatsBook, StatsRegression] | None:
    """A copy of the decoder statistics ``windows``' engine learned, with its regression; None unless it
    knows ``voice``."""
    book, model = windows.streamer.voice_stats, windows.streamer.stats_model
    if book is None or book.prior(voice) is None or model is None or not model.knows(voice):
        return None
    return book.snapshot(), model


def compare(
    settings: Settings, variants: Sequence[str], texts: Sequence[str], voice: str, lang: str, quiet: bool = False
) -> list[PrecisionRow]:
    """One row per variant: its whole and streamed audio against the int8 graph's whole decode."""
    if not variants or not texts:
        return []
    reference_runtime = _runtime(settings, "int8")
    rows = []
    try:
        reference = KokoroWindows(reference_runtime)
        # Every variant streams from the same learned decoder statistics, as saved by a server start (they
        # describe the same network; learning them for each precision is minutes of work that a
        # comparison of the arithmetic skips).
        try:
            learned, model = _statistics(settings, reference, voice)
        except ModelError as exc:  # each row says why; the rest of the evaluation stands
            return [PrecisionRow(variant, "", len(texts), error=str(exc)) for variant in variants]
        references = [np.asarray(reference.streamer.decode(reference.front(t, voice, lang))) for t in texts]
        for variant in variants:
            runtime = reference_runtime
            try:
                if variant != "int8":
                    runtime = _runtime(settings, variant)
            except Exception as exc:  # a variant this machine cannot run is reported, not fatal
                rows.append(PrecisionRow(variant, "", len(texts), error=f"{type(exc).__name__}: {exc}"[:300]))
                continue
            try:
                windows = KokoroWindows(runtime)
                windows.streamer.voice_stats = learned.snapshot()
                windows.streamer.stats_model = model
                providers = ",".join(p.removesuffix("ExecutionProvider") for p in resolve_providers(settings.providers))
                whole, streamed = [], []
                progress = Progress(f"eval precision {variant}", len(texts), quiet)
                for k, (text, ref) in enumerate(zip(texts, references, strict=True), 1):
                    progress.step(k)
                    one, windowed = windows.whole_and_windowed(text, voice, lang)
                    whole.append(pesq_stoi(ref, one, RATE))
                    streamed.append(pesq_stoi(ref, windowed, RATE))
                rows.append(_row(variant, providers, whole, streamed))
                progress.done()
            finally:
                if runtime is not reference_runtime:
                    runtime.close()
    finally:
        reference_runtime.close()
    return rows
