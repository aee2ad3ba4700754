"""Kokoro decoder precision variants: speed (s per audio second, 1 and 2 threads) and fidelity vs int8.

Usage: .venv/bin/python bench/split_precision.py [--frames 120] [--reps 5] [--variants int8,int8-gemm]

Builds the variants' split graphs (by default every one: int8, int8-gemm, fp32, fp32-conv2d, fp16) into a
temporary directory, decodes the same decoder inputs (from the int8 front) with each, and reports
medians of wall and process-CPU time, runs of the variants interleaved so that load from other processes
hits them alike.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from pesq import pesq
from pystoi import stoi
from scipy.signal import resample_poly
from split_measure import REPLY, kokoro_phonemes

from voxserve.engines.kokoro_stream import KokoroStreamer
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.engines.onnx import SessionFactory
from voxserve.models import ModelStore
from voxserve.models.graphs import PRECISIONS, build_split_graphs
from voxserve.settings import Settings
from voxserve.types import SplitPrecision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--variants", default=",".join(PRECISIONS), help="comma-separated; int8 always runs")
    args = parser.parse_args()
    chosen = {"int8", *args.variants.split(",")}
    unknown = chosen - set(PRECISIONS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {', '.join(PRECISIONS)}")
    variants: tuple[SplitPrecision, ...] = tuple(v for v in PRECISIONS if v in chosen)
    store = ModelStore(Settings(_env_file=None))
    ids = np.array([KOKORO_VOCAB[c] for c in kokoro_phonemes(REPLY)], dtype=np.int64)
    style = np.fromfile(store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)[len(ids)]
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {v: Path(tmp) / v for v in variants}
        for variant, path in dirs.items():
            build_split_graphs(store.kokoro_model(), path, precision=variant)
        for threads in (2, 1):
            factory = SessionFactory(["cpu"], threads)
            streamers = {v: KokoroStreamer(factory, path) for v, path in dirs.items()}
            front = streamers["int8"].front(ids, style, 1.0)
            end = min(args.frames, front.frames)
            audio_s = end * 600 / 24_000
            outputs = {v: s.decode(front, 0, end) for v, s in streamers.items()}
            wall: dict[str, list[float]] = {v: [] for v in variants}
            cpu: dict[str, list[float]] = {v: [] for v in variants}
            for _ in range(args.reps):
                for variant, streamer in streamers.items():
                    start, cpu_start = time.perf_counter(), time.process_time()
                    streamer.decode(front, 0, end)
                    wall[variant].append(time.perf_counter() - start)
                    cpu[variant].append(time.process_time() - cpu_start)
            ref16 = resample_poly(outputs["int8"], 2, 3)
            for variant in variants:
                test16 = resample_poly(outputs[variant], 2, 3)
                per_wall = statistics.median(wall[variant]) / audio_s
                per_cpu = statistics.median(cpu[variant]) / audio_s
                print(
                    f"{threads} thread(s) {variant:12s} decoder {per_wall:.3f} s wall, {per_cpu:.3f} s CPU per audio s "
                    "vs int8 "
                    f"PESQ-wb {pesq(16_000, ref16, test16, 'wb'):.3f} STOI {stoi(ref16, test16, 16_000):.4f}"
                    f"{' (identical samples)' if np.array_equal(outputs[variant], outputs['int8']) else ''}"
                )


if __name__ == "__main__":
    main()
