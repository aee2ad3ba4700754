"""`make bench`: speed of each engine on this machine, through the real streaming session.

For each engine and thread count (1 and 2): model load time, time to first chunk for a short and a
long sentence, and the real-time factor for ~10 s of speech. Medians of N runs (default 5).
Prints a table and writes bench/results/bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.tuning import Tuning
from voxserve.types import SynthesisParams

SHORT = "Hello there, how can I help you today?"
REPLY = "Sure, I can help with that. Your order shipped this morning and should arrive on Thursday."
LONG_SENTENCE = (
    "The committee, after a long and sometimes heated discussion that lasted well into the evening, "
    "finally agreed to postpone the vote until the next meeting in early spring."
)
TEN_SECONDS = (
    "Streaming speech synthesis turns text into audio while the text is still arriving. "
    "The first words should be heard within a breath, and the rest should follow without gaps. "
    "A good server keeps up with many callers at once on modest hardware."
)
VOICES = {"kokoro": "af_heart", "piper": "en_US-joe-medium"}


async def _run_once(runtime: Runtime, voice: str, text: str) -> tuple[float, float, float]:
    """(time to first chunk, audio seconds, wall seconds) for one utterance."""
    t0 = time.perf_counter()
    session = runtime.open_session(SynthesisParams(voice=voice), pace=False)
    session.push_text(text)
    session.close()
    first: float | None = None
    audio = 0.0
    async for chunk in session:
        if first is None and len(chunk.samples):
            first = time.perf_counter() - t0
        audio += chunk.duration_s
    return first or 0.0, audio, time.perf_counter() - t0


def bench_engine(engine: str, threads: int, runs: int, mode: str) -> dict[str, float]:
    settings = Settings(_env_file=None, engines=[engine], intra_op_threads=threads)
    runtime = Runtime(settings, Tuning(worker_threads=1, decode_mode=mode))  # type: ignore[arg-type]
    t0 = time.perf_counter()
    runtime.load(warm=True)
    load_s = time.perf_counter() - t0
    voice = VOICES[engine]

    async def measure(text: str) -> list[tuple[float, float, float]]:
        return [await _run_once(runtime, voice, text) for _ in range(runs)]

    try:
        short = asyncio.run(measure(SHORT))
        reply = asyncio.run(measure(REPLY))
        long = asyncio.run(measure(LONG_SENTENCE))
        ten = asyncio.run(measure(TEN_SECONDS))
    finally:
        runtime.close()
    med = statistics.median
    return {
        "load_s": load_s,
        "ttfa_short_ms": med(r[0] for r in short) * 1000,
        "ttfa_reply_ms": med(r[0] for r in reply) * 1000,
        "ttfa_long_ms": med(r[0] for r in long) * 1000,
        "audio_10s_s": med(r[1] for r in ten),
        "rtf_10s": med(r[2] / r[1] for r in ten),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engines", default="piper,kokoro")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--modes", default="windowed,sentence", help="decode modes to compare")
    args = parser.parse_args()
    rows = []
    configs = [
        (engine, int(threads), mode)
        for engine in args.engines.split(",")
        for threads in args.threads.split(",")
        for mode in args.modes.split(",")
    ]
    for engine, threads, mode in configs:
        result = bench_engine(engine, threads, args.runs, mode)
        rows.append({"engine": engine, "threads": threads, "mode": mode, **result})
        print(
            f"{engine:<7} {mode:<8} threads={threads}  load {result['load_s']:.2f} s  "
            f"first chunk: short {result['ttfa_short_ms']:.0f} ms, reply {result['ttfa_reply_ms']:.0f} ms, "
            f"long {result['ttfa_long_ms']:.0f} ms  RTF (~{result['audio_10s_s']:.1f} s) {result['rtf_10s']:.3f}",
            flush=True,
        )
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "bench.json").write_text(json.dumps(rows, indent=2))
    print(f"medians of {args.runs} runs; written to {out / 'bench.json'}")


if __name__ == "__main__":
    main()
