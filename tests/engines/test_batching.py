"""Cross-stream batching: the batchable decoder graph and the runner that merges concurrent windows."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from pesq import pesq
from scipy.signal import resample_poly

from voxserve.engines.batching import BatchPolicy, BatchRunner, stack_feeds
from voxserve.engines.kokoro_stream import HOP, KokoroFront, KokoroStreamer
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.engines.onnx import RunControl, SessionFactory
from voxserve.errors import Cancelled, EngineFailure
from voxserve.models import ModelStore
from voxserve.models.split_cache import ensure_split_graphs

SENTENCES = (
    "ʃˈʊɹ, ˌI kæn hˈɛlp wɪð ðˈæt.",  # "Sure, I can help with that."
    "jˌʊɹ ˈɔɹdəɹ ʃˈɪpt ðɪs mˈɔɹnɪŋ.",  # "Your order shipped this morning."
    "ɪt wɪl əɹˈIv ˌɔn θˈɜɹzdˌA.",  # "It will arrive on Thursday."
)


def test_stack_feeds_broadcasts_unused_statistics() -> None:
    a = {"content": np.ones((1, 4, 3), np.float32), "stat": np.zeros((1, 1, 1), np.float32)}
    b = {"content": np.full((1, 4, 3), 2, np.float32), "stat": np.full((1, 5, 1), 7, np.float32)}
    out = stack_feeds([a, b])
    assert out["content"].shape == (2, 4, 3) and out["stat"].shape == (2, 5, 1)
    assert np.all(out["stat"][0] == 0) and np.all(out["stat"][1] == 7) and np.all(out["content"][1] == 2)


@pytest.fixture(scope="module")
def graphs(model_store: ModelStore) -> Path:
    return ensure_split_graphs(model_store, "kokoro")


@pytest.fixture(scope="module")
def fronts(graphs: Path, model_store: ModelStore) -> list[KokoroFront]:
    streamer = KokoroStreamer(SessionFactory(["cpu"], 2), graphs)
    voice = np.fromfile(model_store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)
    out = []
    for text in SENTENCES:
        ids = np.array([KOKORO_VOCAB[c] for c in text], dtype=np.int64)
        out.append(streamer.front(ids, voice[len(ids)], 1.0, max_pad_frames=4, max_lead_frames=2))
    return out


def _decode_all(streamer: KokoroStreamer, front: KokoroFront) -> np.ndarray:
    # 0.5 s windows: with 0.3 s ones the int8 batch-scale differences put one sentence at PESQ 3.99-4.1
    pieces = streamer.decode_windows(front, 20, 20, max_window_frames=20)
    return np.concatenate([p.samples for p in pieces])


def test_concurrent_streams_share_decoder_calls_and_sound_the_same(graphs: Path, fronts: list[KokoroFront]) -> None:
    """Three streams decoding at once with equal windows: fewer calls than windows, same audio.

    Not sample-equal: the int8 graph quantizes each call's activations with one scale for the whole
    batch, and the harmonic source's phase turns rounding differences into small phase changes, so the
    comparison is PESQ against each stream decoded alone.
    """
    factory = SessionFactory(["cpu"], 2)
    alone = [_decode_all(KokoroStreamer(factory, graphs), front) for front in fronts]
    shared = KokoroStreamer(factory, graphs, batch=BatchPolicy(max_batch=3, max_wait_s=0.5))
    results: list[np.ndarray | None] = [None] * len(fronts)

    def stream(i: int) -> None:
        results[i] = _decode_all(shared, fronts[i])

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(len(fronts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    shared.close()
    assert shared.decoder.batches < shared.decoder.windows  # some calls held several streams' windows
    for reference, batched, front in zip(alone, results, fronts, strict=True):
        assert batched is not None and len(batched) == len(reference) == front.frames * HOP
        score = pesq(16_000, resample_poly(reference, 2, 3), resample_poly(batched, 2, 3), "wb")
        assert score >= 4.0


def test_a_batch_of_one_is_the_plain_call(graphs: Path, fronts: list[KokoroFront]) -> None:
    """The batch path (stacking, I/O binding, row split) gives a lone window exactly what session.run does."""
    factory = SessionFactory(["cpu"], 2)
    plain = _decode_all(KokoroStreamer(factory, graphs), fronts[0])
    lone = KokoroStreamer(factory, graphs, batch=BatchPolicy(max_batch=4, max_wait_s=0.0))
    batched = _decode_all(lone, fronts[0])
    lone.close()
    assert lone.decoder.batches == lone.decoder.windows
    np.testing.assert_array_equal(plain, batched)


def _feeds(streamer: KokoroStreamer, front: KokoroFront) -> dict[str, np.ndarray]:
    feeds: dict[str, np.ndarray] = {
        "style": front.style,
        "content": np.ascontiguousarray(front.content[:, :, :10]),
        "f0": np.ascontiguousarray(front.f0[:, :20]),
        "energy": np.ascontiguousarray(front.energy[:, :20]),
        "phase0": np.zeros((1, 1, 9), np.float32),
        "mix_frame": np.zeros(1, np.float32),
        "mix_vocoder": np.zeros(1, np.float32),
    }
    names = [i.name for i in streamer.decoder_session.get_inputs() if i.name.startswith("stat_in_")]
    return feeds | {name: np.zeros((1, 1, 1), np.float32) for name in names}


def test_a_cancelled_stream_waiting_for_a_batch_is_dropped(graphs: Path, fronts: list[KokoroFront]) -> None:
    streamer = KokoroStreamer(SessionFactory(["cpu"], 1), graphs)
    runner = BatchRunner(streamer.decoder_session, BatchPolicy(max_batch=8, max_wait_s=1.0), ["content"])
    control = RunControl()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            runner.run(["audio"], _feeds(streamer, fronts[0]), "test window", control)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    control.cancel()  # while the call waits up to 1 s for company
    thread.join(timeout=10)
    runner.close()
    assert len(errors) == 1 and isinstance(errors[0], Cancelled)
    assert runner.batches == 0  # the model never ran


def test_a_failed_batch_fails_every_caller_with_an_engine_error(graphs: Path, fronts: list[KokoroFront]) -> None:
    streamer = KokoroStreamer(SessionFactory(["cpu"], 1), graphs)
    runner = BatchRunner(streamer.decoder_session, BatchPolicy(max_batch=2, max_wait_s=1.0), ["content"])
    bad = _feeds(streamer, fronts[0]) | {"f0": np.zeros((1, 3), np.float32)}  # f0 must have 2 values per frame
    errors: list[BaseException] = []

    def call() -> None:
        try:
            runner.run(["audio"], bad, "bad window")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    # the runner still serves good calls afterwards
    audio = runner.run(["audio"], _feeds(streamer, fronts[0]), "good window")[0]
    runner.close()
    assert len(errors) == 2 and all(isinstance(e, EngineFailure) and "bad window" in str(e) for e in errors)
    assert audio.shape == (1, 10 * HOP)
