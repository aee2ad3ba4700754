"""The evaluation's optional parts without models: option parsing for peers and precisions, the silence
trim used against a peer's output, the peers' summary and the report's peer and precision tables."""

from __future__ import annotations

import sys
import wave
from pathlib import Path

import numpy as np
import pytest

from voxserve.errors import InvalidInput
from voxserve.evaluation import peers, precisions, report
from voxserve.evaluation.fidelity import SeamStats, trim_silence
from voxserve.evaluation.precisions import PrecisionRow
from voxserve.evaluation.run import PeerResult, SentenceResult, summarize, summarize_peers


def test_peer_and_precision_options() -> None:
    assert peers.parse("kokoro-onnx, piper-tts,kokoro-onnx") == ("kokoro-onnx", "piper-tts")
    assert peers.parse("") == ()
    with pytest.raises(InvalidInput, match="unknown peer 'espeak'"):
        peers.parse("kokoro-onnx,espeak")
    assert peers.supports("kokoro-onnx", "ja") and not peers.supports("piper-tts", "fr")
    assert precisions.parse("fp32,int8") == ("fp32", "int8")
    assert precisions.parse("none") == precisions.parse("") == ()
    with pytest.raises(InvalidInput, match="unknown precision 'bf16'"):
        precisions.parse("int8,bf16")


def test_a_missing_peers_venv_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="make peers-venv"):
        peers.check_python(tmp_path / "bin" / "python")


def test_trim_silence_keeps_the_sound_and_a_margin() -> None:
    rate = 16_000
    t = np.arange(rate) / rate
    tone = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    padded = np.concatenate([np.zeros(rate // 2, np.float32), tone, np.zeros(rate, np.float32)])
    trimmed = trim_silence(padded, rate)
    assert abs(len(trimmed) - (rate + 2 * int(0.02 * rate))) <= rate // 100  # the tone, 20 ms either side
    assert (
        np.allclose(trim_silence(np.zeros(100, np.float32), rate), 0) and len(trim_silence(np.zeros(100), rate)) == 100
    )


def test_piper_wav_files_are_read_as_float(tmp_path: Path) -> None:
    path = tmp_path / "1.wav"
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(22_050)
        wav.writeframes(np.array([0, 16384, -32768], dtype="<i2").tobytes())
    audio = peers._read_wav(path)
    assert audio.sample_rate == 22_050 and audio.samples.tolist() == [0.0, 0.5, -1.0]


def _sentence(voice: str, engine: str, language: str = "en", error: float = 0.0) -> SentenceResult:
    seams = SeamStats(
        joins=3, median_ratio=0.8, p99_ratio=1.0, clicks=0, baseline_median_ratio=0.7, baseline_click_share=0.0
    )
    return SentenceResult(
        language, voice, engine, "Hello there.", "hello there", error, 1.2, 1.3, 4.1, 0.97, 4.2, 0.98, seams
    )


def test_report_puts_each_peer_beside_voxserve_and_lists_the_precisions() -> None:
    results = [_sentence("af_heart", "kokoro"), _sentence("en_US-joe-medium", "piper")]
    summaries = summarize(results, {"en af_heart": {"ovrl_mos": 3.3}})
    peer_results = [
        PeerResult("en", "kokoro-onnx", "af_heart", "Hello there.", "hello there", 0.0, 1.1, 4.0, 0.99),
        PeerResult("en", "kokoro-onnx", "af_heart", "Good day.", "good day to you", 1.0, 0.9, 3.0, 0.95),
        PeerResult("en", "piper-tts", "en_US-joe-medium", "Hello there.", "hello", 0.5, 1.0),
    ]
    rows = summarize_peers(peer_results, {"kokoro-onnx af_heart": {"ovrl_mos": 3.4}})
    assert [(r.peer, r.sentences, r.error_rate, r.dnsmos_ovrl) for r in rows] == [
        ("kokoro-onnx", 2, 0.5, 3.4),
        ("piper-tts", 1, 0.5, None),
    ]
    assert rows[0].voxserve_pesq_median == 3.5 and rows[0].voxserve_stoi_min == 0.95
    assert rows[1].voxserve_pesq_median is None
    precision_rows = [
        PrecisionRow("int8", "CPU", 2, 4.64, 4.64, 1.0, 1.0, 4.2, 4.1, 0.99, 0.98),
        PrecisionRow("fp16", "", 2, error="ModelError: no float16 Conv kernel"),
    ]
    extra = report.Extra(rows, peer_results, precision_rows, {"kokoro-onnx": "0.6.1", "piper-tts": "1.8.0"})
    text = report.markdown(summaries, results, "voxserve eval --compare kokoro-onnx,piper-tts", [], extra)
    assert "kokoro-onnx 0.6.1, piper-tts 1.8.0" in text
    assert "| en | voxserve (kokoro, streamed) | af_heart | 1 | WER 0.000 | 3.30 | | |" in text
    assert "| en | kokoro-onnx | af_heart | 2 | WER 0.500 | 3.40 | 3.50 (3.00) | 0.970 (0.950) |" in text
    assert "| en | piper-tts | en_US-joe-medium | 1 | WER 0.500 | - | - (-) | - (-) |" in text
    assert "| int8 | CPU | 2 | 4.64 (4.64) | 1.000 (1.000) | 4.20 (4.10) | 0.990 (0.980) |  |" in text
    assert (
        "| fp16 | - | 2 | - (-) | - (-) | - (-) | - (-) | not available: ModelError: no float16 Conv kernel |" in text
    )
    assert "| piper-tts | en_US-joe-medium | Hello there. | hello | 0.50 | - | - |" in text
    data = report.as_json(summaries, results, extra)
    assert data["peer_versions"] == {"kokoro-onnx": "0.6.1", "piper-tts": "1.8.0"}
    peer_sentences, precisions = data["peer_sentences"], data["precisions"]
    assert isinstance(peer_sentences, list) and isinstance(precisions, list)
    assert [p["peer"] for p in peer_sentences] == ["kokoro-onnx", "kokoro-onnx", "piper-tts"]
    assert [r["error"] for r in precisions] == [None, "ModelError: no float16 Conv kernel"]
    plain = report.markdown(summaries, results, "voxserve eval", [])
    assert "## Peers" not in plain and "## Precision" not in plain


def test_a_voice_heard_in_two_languages_gets_a_row_for_each() -> None:
    """One Kokoro voice can speak English and Spanish: its English WERs and Spanish CERs are two rows,
    each with its own DNSMOS, never one mean of both."""
    results = [_sentence("ef_dora", "kokoro", "en", 1.0), _sentence("ef_dora", "kokoro", "en", 0.5)]
    results += [_sentence("ef_dora", "kokoro", "es", 0.0), _sentence("ef_dora", "kokoro", "es", 0.1)]
    rows = summarize(results, {"es ef_dora": {"ovrl_mos": 3.1}})
    assert [(r.language, r.metric, r.sentences, r.error_rate, r.dnsmos_ovrl) for r in rows] == [
        ("en", "WER", 2, 0.75, None),
        ("es", "CER", 2, pytest.approx(0.05), 3.1),
    ]


def test_a_peers_python_without_the_peer_is_refused_before_any_sentence(tmp_path: Path) -> None:
    """A Python that runs but lacks the peer (the system's) used to fail after voxserve's own scores were
    computed, and lose them; it is refused up front, saying how to build the venv."""
    with pytest.raises(InvalidInput, match=r"lacks \['piper'\].*make peers-venv"):
        peers.check_python(Path(sys.executable), ("piper-tts",))
    with pytest.raises(InvalidInput, match=r"no peers Python at .*make peers-venv"):
        peers.check_python(tmp_path / "bin" / "python", ("kokoro-onnx",))
    peers.check_python(Path(sys.executable), ())  # no peer asked for: only that it runs
