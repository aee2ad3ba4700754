"""A short real evaluation: Piper English and Kokoro Spanish sentences through Whisper, PESQ/STOI (and
each engine's windows against one decode of the same front) and the seam statistics; the report is
written and the speech is understood."""

from __future__ import annotations

import json
from pathlib import Path

from voxserve.evaluation import precisions
from voxserve.evaluation.command import write_report
from voxserve.evaluation.run import Evaluation
from voxserve.evaluation.synth import Synthesizer
from voxserve.runtime import Runtime


def test_short_eval_writes_a_report_with_low_error_rates(runtime: Runtime, tmp_path: Path) -> None:
    synthesizer = Synthesizer(["kokoro", "piper"], streamed=runtime)
    try:
        # DNSMOS is left out: its first call (librosa's JIT, two ONNX models) alone takes ~8 s
        evaluation = Evaluation(synthesizer, naturalness=False, quiet=True)
        results = evaluation.language("en", ("en_US-joe-medium",), 2) + evaluation.language("es", ("ef_dora",), 2)
    finally:
        synthesizer.close()
    summaries = write_report(tmp_path, results, evaluation.naturalness_scores, "voxserve eval --languages en,es")
    assert [(s.language, s.voice, s.metric, s.sentences) for s in summaries] == [
        ("en", "en_US-joe-medium", "WER", 2),
        ("es", "ef_dora", "CER", 2),
    ]
    for s in summaries:
        assert s.error_rate <= 0.2, [(r.text, r.heard) for r in results if r.voice == s.voice]
        assert s.joins > 0
        assert s.dnsmos_ovrl is None
        assert s.window_pesq_median is not None and 1 <= s.window_pesq_median <= 4.7
        assert s.window_stoi_median is not None and 0 < s.window_stoi_median <= 1
    piper, kokoro = summaries
    assert kokoro.stoi_median is not None and 0 < kokoro.stoi_median <= 1
    # Piper's front draws random noise: a whole synthesis never lines up with a streamed one, so it has no
    # streamed-vs-whole score; its windows against one decode of the same front are as good as the bar asks
    assert piper.pesq_median is None and piper.stoi_median is None
    assert piper.window_pesq_median is not None and piper.window_pesq_median >= 3.5
    assert piper.window_stoi_median is not None and piper.window_stoi_median >= 0.9
    report = (tmp_path / "report.md").read_text()
    assert "| en | en_US-joe-medium | piper | 2 | WER" in report and "| es | ef_dora | kokoro | 2 | CER" in report
    assert (tmp_path / "intelligibility.png").stat().st_size > 1000 and (tmp_path / "fidelity.png").exists()
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["sentences"]) == 4 and all(r["heard"] for r in data["sentences"])


def test_the_precision_comparison_streams_from_learned_statistics(runtime: Runtime) -> None:
    """Each precision streams from the decoder statistics a server here learned: those of the int8 model,
    or of the variant ``auto`` runs on this CPU (int8-gemm where its matrix products pay), which is the
    only one a server start teaches. Without them the shipped model streamed against its own whole decode
    scored PESQ 1.35 on this sentence, which said nothing of its arithmetic."""
    rows = precisions.compare(runtime.settings, ("int8",), ["Sure, I can help with that."], "af_heart", "en-us", True)
    assert [(r.precision, r.error) for r in rows] == [("int8", None)]
    assert rows[0].whole_pesq_median is not None and rows[0].whole_pesq_median >= 4.5  # the reference itself
    assert rows[0].streamed_pesq_median is not None and rows[0].streamed_pesq_median >= 3.5
