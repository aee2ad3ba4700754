"""Windowed vs whole-sentence Kokoro decoding: PESQ-wb and STOI on a set of sentences.

Uses the server's own settings (context, first/next window, growth) on each sentence as a stream's
first segment, with and without the voice's learned vocoder statistics ("warm": the voice has spoken
one other sentence first, as it has after the server's warm-up), and as a later segment (the largest
windows). The reference is the same front decoded in one window (= the monolithic graph's audio).

    .venv/bin/python -m bench.fidelity [--voice af_heart] [--context-ms 200]
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np
from pesq import pesq
from pystoi import stoi
from scipy.signal import resample_poly

from voxserve.engines.kokoro import KokoroVoices
from voxserve.engines.kokoro_stream import HOP, SAMPLE_RATE, KokoroFront, KokoroStreamer
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.engines.onnx import SessionFactory
from voxserve.engines.vocoder_stats import VoiceStatsBook
from voxserve.models import ModelStore
from voxserve.models.split_cache import ensure_split_graphs
from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.text.frontend import Frontend

SENTENCES = [
    "Sure, I can help with that.",
    "Your order shipped this morning and should arrive on Thursday.",
    "The weather today is sunny with a light breeze from the west.",
    "How are you doing this fine morning, my friend?",
    "Please hold while I check the status of your account.",
    "Thanks for calling, is there anything else I can do for you?",
]
WARM_UP = "Hello there, how are you today?"


def score(reference: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    ref16, test16 = resample_poly(reference, 2, 3), resample_poly(test, 2, 3)
    return float(pesq(16_000, ref16, test16, "wb")), float(stoi(ref16, test16, 16_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--context-ms", type=int, default=None, help="override window_context_ms")
    parser.add_argument(
        "--late-stats", action="store_true", help="first windows without the sentence's statistics (saves ~30 ms)"
    )
    parser.add_argument("--first-context-ms", type=int, default=None, help="override window_first_context_ms")
    parser.add_argument(
        "--learned-from", default=None, help="warm the statistics with this voice instead (a voice never heard)"
    )
    parser.add_argument("--prior-frames", type=int, default=None, help="override the voice prior's weight")
    args = parser.parse_args()
    settings = Settings(_env_file=None, engines=["kokoro"])  # type: ignore[call-arg]
    windows = Runtime(settings).window_config()
    frame_s = HOP / SAMPLE_RATE
    context = windows.frames((args.context_ms or settings.window_context_ms) / 1000, frame_s)
    store = ModelStore(settings)
    graphs = ensure_split_graphs(store, "kokoro", "int8")
    streamer = KokoroStreamer(SessionFactory(["cpu"], 2), graphs, context_frames=context)
    voices = KokoroVoices(store.kokoro_voices_dir())
    frontend = Frontend(settings)

    def front(text: str, voice: str = args.voice) -> KokoroFront:
        phonemes = " ".join(s.phonemes for s in frontend.phonemize(text, "en-us"))
        ids = np.array([KOKORO_VOCAB[c] for c in phonemes], dtype=np.int64)
        return streamer.front(
            ids,
            voices.style(voice, len(ids)),
            max_pad_frames=windows.frames(windows.max_pad_s, frame_s),
            max_lead_frames=windows.frames(windows.max_lead_s, frame_s),
        )

    first, following, largest = windows.plan(windows.first_s, frame_s)
    early = windows.early_stats and not args.late_stats
    first_ms = args.first_context_ms or settings.window_first_context_ms
    plans = {"first segment": (first, following), "later segment": (largest, largest)}
    first_context = {"first segment": windows.frames(first_ms / 1000, frame_s), "later segment": None}
    fronts = [(f, streamer.decode(f)) for f in map(front, SENTENCES)]
    rows = []
    for plan, (a, b) in plans.items():
        for warm in (False, True):
            weight = {"prior_frames": args.prior_frames} if args.prior_frames else {}
            streamer.voice_stats = VoiceStatsBook(**weight)  # type: ignore[arg-type]
            if warm:
                teacher = args.learned_from or args.voice
                for _ in streamer.decode_windows(front(WARM_UP, teacher), a, b, growth=windows.growth, voice=teacher):
                    pass
            scores = []
            for f, whole in fronts:
                pieces = streamer.decode_windows(
                    f,
                    a,
                    b,
                    growth=windows.growth,
                    max_window_frames=largest,
                    voice=args.voice if warm else None,
                    early_stats=early,
                    first_context_frames=first_context[plan],
                )
                scores.append(score(whole, np.concatenate([p.samples for p in pieces])))
            row = {
                "plan": plan,
                "voice_stats": "warm" if warm else "none",
                "context_frames": context,
                "early_stats": early,
                "first_context_frames": first_context[plan],
                "pesq_median": round(statistics.median(s[0] for s in scores), 2),
                "pesq_min": round(min(s[0] for s in scores), 2),
                "stoi_median": round(statistics.median(s[1] for s in scores), 3),
                "stoi_min": round(min(s[1] for s in scores), 3),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
