"""The pause between two sentences, for a range of decoder window sizes: whether it depends on where
the windows were cut.

One whole text of two sentences is synthesized unpaced once per first window size (``--first``, each
with windows up to 1.5 times it), so that the cuts fall at different places relative to the end of the
first sentence's speech. For each, the longest run of quiet 5 ms frames between the first and the last
sound is printed; the spread is what the cut moves the pause by.

    .venv/bin/python -m bench.pause_sweep --voice af_heart
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses

import numpy as np

from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.types import SynthesisParams

TEXT = "Your order shipped this morning. It should arrive on Thursday."


def longest_inner_quiet_s(audio: np.ndarray, rate: int, threshold: float = 0.003) -> float:
    frame = rate // 200
    n = len(audio) // frame
    loud = np.sqrt(np.mean(audio[: n * frame].reshape(n, frame) ** 2, axis=1)) >= threshold
    sound = np.flatnonzero(loud)
    longest = run = 0
    for quiet in ~loud[sound[0] : sound[-1]]:
        run = run + 1 if quiet else 0
        longest = max(longest, run)
    return longest / 200


async def sweep(runtime: Runtime, voice: str, text: str, firsts: list[float]) -> list[float]:
    gaps = []
    for first in firsts:
        base = runtime.session_config(pace=False)
        config = dataclasses.replace(
            base, first_window_s=first, max_window_s=1.5 * first, max_unpaced_window_s=1.5 * first
        )
        session = runtime.open_session(SynthesisParams(voice=voice), pace=False, config=config)
        session.push_text(text)
        session.close()
        audio = np.concatenate([chunk.samples async for chunk in session])
        gaps.append(longest_inner_quiet_s(audio, session.sample_rate))
    return gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--first", default="0.3:1.75:0.05", help="first window sizes, start:stop:step seconds")
    args = parser.parse_args()
    start, stop, step = (float(x) for x in args.first.split(":"))
    firsts = [round(start + i * step, 3) for i in range(int((stop - start) / step + 1e-9) + 1)]
    runtime = Runtime(Settings(_env_file=None))
    runtime.load()
    try:
        engine = runtime.engine_for(args.voice).name
        print(f"{args.voice} ({engine}); configured sentence pause {runtime.session_config().sentence_pause_ms} ms")
        gaps = asyncio.run(sweep(runtime, args.voice, args.text, firsts))
    finally:
        runtime.close()
    for first, gap in zip(firsts, gaps, strict=True):
        print(f"first window {first:.2f} s: pause {gap * 1000:.0f} ms")
    print(f"spread {1000 * (max(gaps) - min(gaps)):.0f} ms, median {1000 * float(np.median(gaps)):.0f} ms")


if __name__ == "__main__":
    main()
