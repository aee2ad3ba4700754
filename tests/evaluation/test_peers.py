"""``voxserve eval --compare``: the peer libraries run for real from ``.venv-peers`` (``make peers-venv``,
which ``make test`` builds) over an English sentence. Whisper understands both peers, and voxserve's
stream is scored against kokoro-onnx's synthesis of the same phonemes (the common reference)."""

from __future__ import annotations

from pathlib import Path

from voxserve.evaluation import peers
from voxserve.evaluation.run import Evaluation, summarize_peers
from voxserve.evaluation.synth import Synthesizer
from voxserve.runtime import Runtime

PEERS_PYTHON = Path(__file__).resolve().parents[2] / ".venv-peers" / "bin" / "python"


def test_peers_speak_the_same_sentences_beside_voxserve(runtime: Runtime) -> None:
    peers.check_python(PEERS_PYTHON, peers.PEERS)  # a missing venv fails here, saying how to build it
    synthesizer = Synthesizer(["kokoro", "piper"], streamed=runtime)
    try:
        evaluation = Evaluation(
            synthesizer, naturalness=False, quiet=True, peers=peers.PEERS, peers_python=PEERS_PYTHON
        )
        evaluation.language("en", ("af_heart", "en_US-joe-medium"), 1)
    finally:
        synthesizer.close()
    results = evaluation.peer_results
    assert [(r.peer, r.voice) for r in results] == [("kokoro-onnx", "af_heart"), ("piper-tts", "en_US-joe-medium")]
    for r in results:
        assert r.audio_s > 0.8 and r.error_rate <= 0.2, (r.peer, r.text, r.heard)
    kokoro = [r for r in results if r.peer == "kokoro-onnx"]
    # voxserve's stream scored against kokoro-onnx's synthesis of the same phonemes (the common reference)
    assert all(r.voxserve_pesq_wb is not None and 1.0 <= r.voxserve_pesq_wb <= 4.65 for r in kokoro), kokoro
    assert all(r.voxserve_stoi is not None and -1.0 <= r.voxserve_stoi <= 1.0 for r in kokoro), kokoro
    assert all(r.voxserve_pesq_wb is None for r in results if r.peer == "piper-tts")  # no common reference
    rows = summarize_peers(results, {})
    assert [(p.peer, p.metric, p.sentences) for p in rows] == [("kokoro-onnx", "WER", 1), ("piper-tts", "WER", 1)]
