"""Windowed vs whole-sentence Kokoro decoding: PESQ-wb and STOI on a set of sentences.

Uses the server's own settings (context, first/next window, growth) and learned statistics on each
sentence as a stream's first segment and as a later segment (the largest windows), with three kinds of
vocoder statistics to start from: none (each window's own), the voice's learned average, and the
sentence's statistics predicted from its frame-rate ones (the server's default). The reference is the
same front decoded in one window (= the monolithic graph's audio). None of these sentences is among
those the runtime learns from (``voxserve/text/teaching.py``).

With ``--ablate`` it instead decodes the first-segment plan with each window correction switched off in
turn (:class:`~voxserve.engines.vocoder_stats.Corrections`), then all of them, to show what each brings.

    .venv/bin/python -m bench.fidelity [--voice af_heart] [--context-ms 200] [--ablate]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterator
from dataclasses import fields, replace

import numpy as np

from voxserve.engines.kokoro_stream import SAMPLE_RATE, KokoroFront
from voxserve.engines.vocoder_stats import Corrections
from voxserve.evaluation.fidelity import pesq_stoi
from voxserve.evaluation.kokoro_windows import KokoroWindows
from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.tuning import Tuning

SENTENCES = [
    "Sure, I can help with that.",
    "Your order shipped this morning and should arrive on Thursday.",
    "The weather today is sunny with a light breeze from the west.",
    "How are you doing this fine morning, my friend?",
    "Please hold while I check the status of your account.",
    "Thanks for calling, is there anything else I can do for you?",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--context-ms", type=int, default=None, help="override window_context_ms")
    parser.add_argument(
        "--late-stats", action="store_true", help="first windows without the sentence's statistics (saves ~30 ms)"
    )
    parser.add_argument("--first-context-ms", type=int, default=None, help="override window_first_context_ms")
    parser.add_argument("--ablate", action="store_true", help="the first segment with each correction off in turn")
    args = parser.parse_args()
    tuning = Tuning(window_early_stats=not args.late_stats)
    if args.context_ms is not None:
        tuning = replace(tuning, window_context_ms=args.context_ms)
    if args.first_context_ms is not None:
        tuning = replace(tuning, window_first_context_ms=args.first_context_ms)
    runtime = Runtime(Settings(_env_file=None, engines=["kokoro"]), tuning)
    runtime.load(warm=True)  # warm-up and learned statistics, as the server starts
    kokoro = KokoroWindows(runtime)
    streamer, windows, frame_s = kokoro.streamer, kokoro.windows, kokoro.frame_s

    def front(text: str) -> KokoroFront:
        return kokoro.front(text, args.voice)

    first, following, largest = windows.plan(windows.first_s, frame_s)
    plans = {"first segment": (first, following), "later segment": (largest, largest)}
    first_context = {"first segment": windows.frames(windows.first_context_s, frame_s), "later segment": None}
    fronts = [(f, streamer.decode(f)) for f in map(front, SENTENCES)]
    book, model = streamer.voice_stats, streamer.stats_model

    def settings() -> Iterator[tuple[str, str, Corrections]]:
        if not args.ablate:
            for plan in plans:
                for start in ("none", "voice average", "predicted"):
                    yield plan, start, Corrections()
            return
        yield "first segment", "predicted", Corrections()
        for switch in fields(Corrections):
            yield "first segment", "predicted", replace(Corrections(), **{switch.name: False})
        off = {switch.name: False for switch in fields(Corrections)}
        yield "first segment", "predicted", Corrections(**off)

    rows = []
    for plan, start, corrections in settings():
        a, b = plans[plan]
        # a copy of the book per row, so that the rows do not learn from each other's windows
        streamer.corrections = corrections
        keep_book = corrections.voice_stats and book is not None
        streamer.voice_stats = book.snapshot() if keep_book and book is not None else None
        streamer.stats_model = model if start == "predicted" and corrections.voice_stats else None
        scores = []
        for f, whole in fronts:
            pieces = streamer.decode_windows(
                f,
                a,
                b,
                growth=windows.growth,
                max_window_frames=largest,
                voice=None if start == "none" else args.voice,
                early_stats=windows.early_stats,
                first_context_frames=first_context[plan],
            )
            scores.append(pesq_stoi(whole, np.concatenate([p.samples for p in pieces]), SAMPLE_RATE))
        row = {
            "plan": plan,
            "start_from": start,
            "off": [f.name for f in fields(Corrections) if not getattr(corrections, f.name)],
            "context_frames": streamer.context_frames,
            "early_stats": windows.early_stats,
            "first_context_frames": first_context[plan],
            "pesq_median": round(statistics.median(s[0] for s in scores), 2),
            "pesq_min": round(min(s[0] for s in scores), 2),
            "stoi_median": round(statistics.median(s[1] for s in scores), 3),
            "stoi_min": round(min(s[1] for s in scores), 3),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    runtime.close()


if __name__ == "__main__":
    main()
