"""Concurrency check for the windowed Kokoro path on whatever providers are present (GPU when there is one).

Runs N concurrent streams (default 1, 16, 64, 256) of the short agent reply through KokoroEngine.stream
with split graphs, on one shared set of ONNX sessions, and reports per level: median and p90 time to
first audio, and aggregate real-time factor (audio seconds produced per wall second). Needs only numpy
and onnxruntime (phonemes are given, so no text frontend is loaded).

``--batch N`` (default 64) lets up to N streams' decoder windows share one call, with window sizes in
0.25 s steps as the server uses when batching; ``--batch 1`` measures unbatched calls. Use the
``--graphs`` of the precision to measure (fp16 is the GPU default).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import statistics
import threading
import time
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from voxserve.engines.batching import BatchPolicy
from voxserve.engines.kokoro import KokoroEngine
from voxserve.engines.kokoro_stream import KokoroStreamer
from voxserve.engines.onnx import SessionFactory
from voxserve.engines.windowing import WindowConfig

# misaki phonemes of "Sure, I can help with that. Your order shipped this morning and should arrive on Thursday."
REPLY = "ʃˈʊɹ, ˌI kæn hˈɛlp wɪð ðˈæt. jˌʊɹ ˈɔɹdəɹ ʃˈɪpt ðɪs mˈɔɹnɪŋ ænd ʃˌʊd əɹˈIv ˌɔn θˈɜɹzdˌA."


def one_stream(engine: KokoroEngine, t_start: float, keep: list[np.ndarray] | None = None) -> tuple[float, float]:
    first = None
    audio = 0.0
    for piece in engine.stream(REPLY, "af_heart", 1.0, first_window_s=0.25):
        if first is None:
            first = time.perf_counter() - t_start
        audio += len(piece.samples) / 24_000
        if keep is not None:
            keep.append(piece.samples)
    return first or 0.0, audio


def save_wav(path: Path, pieces: list[np.ndarray], rate: int = 24_000) -> None:
    """16-bit mono WAV, to compare a GPU run's audio with the CPU's where the tests run."""
    pcm = (np.clip(np.concatenate(pieces), -1.0, 1.0) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())


def level(engine: KokoroEngine, streams: int, workers: int) -> dict[str, float]:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=min(streams, workers)) as pool:
        results = list(pool.map(lambda _: one_stream(engine, time.perf_counter()), range(streams)))
    wall = time.perf_counter() - t0
    ttfa = sorted(r[0] for r in results)
    return {
        "streams": streams,
        "ttfa_median_ms": statistics.median(ttfa) * 1000,
        "ttfa_p90_ms": ttfa[math.ceil(0.9 * len(ttfa)) - 1] * 1000,  # nearest rank
        "aggregate_rtf_x": sum(r[1] for r in results) / wall,
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", type=Path, required=True, help="kokoro-v1.0.int8.onnx")
    parser.add_argument("--voices", type=Path, required=True, help="directory of <voice>.bin")
    parser.add_argument("--graphs", type=Path, required=True, help="split graph directory")
    parser.add_argument("--levels", default="1,16,64,256")
    parser.add_argument("--workers", type=int, default=16, help="threads issuing model calls")
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads per session")
    parser.add_argument("--batch", type=int, default=64, help="most windows per decoder call (1 = no batching)")
    parser.add_argument("--batch-wait-ms", type=float, default=2.0)
    parser.add_argument("--providers", default="auto", help="comma-separated, as VOXSERVE_PROVIDERS")
    parser.add_argument(
        "--preload-torch",
        action="store_true",
        help="import PyTorch first: its CUDA libraries then serve onnxruntime-gpu's CUDA provider",
    )
    parser.add_argument("--save-audio", type=Path, help="write the warm-up stream's audio here (WAV)")
    args = parser.parse_args()
    if args.preload_torch:
        importlib.import_module("torch")  # before the first session loads the CUDA provider
    factory = SessionFactory(args.providers.split(","), args.threads)
    print(f"providers: {factory.providers}, batch {args.batch}, graphs {args.graphs}", flush=True)
    policy = BatchPolicy(args.batch, args.batch_wait_ms / 1000)
    windows = WindowConfig(growth=1.0, quantum_s=0.25) if policy.enabled else WindowConfig()
    streamer = KokoroStreamer(factory, args.graphs, batch=policy)
    engine = KokoroEngine(factory.create(args.model), args.voices, streamer, windows)
    pieces: list[np.ndarray] = []
    one_stream(engine, time.perf_counter(), pieces)  # warm-up
    if args.save_audio is not None:
        save_wav(args.save_audio, pieces)
    lock = threading.Lock()
    rows = []
    for n in (int(x) for x in args.levels.split(",")):
        calls, windows_done = streamer.decoder.batches, streamer.decoder.windows
        row = level(engine, n, max(args.workers, args.batch))
        calls, windows_done = streamer.decoder.batches - calls, streamer.decoder.windows - windows_done
        row["windows_per_call"] = windows_done / max(calls, 1)
        with lock:
            rows.append(row)
        print(json.dumps(row), flush=True)
    streamer.close()
    print(json.dumps({"providers": factory.providers, "batch": args.batch, "levels": rows}))


if __name__ == "__main__":
    main()
