"""Windowed decoding: window plans, the crossfade joiner, and Kokoro/Piper windows vs whole-sentence audio."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from pesq import pesq
from pystoi import stoi
from scipy.signal import resample_poly

from voxserve.engines.kokoro import KokoroEngine
from voxserve.engines.kokoro_stream import HOP as KOKORO_HOP
from voxserve.engines.kokoro_stream import KokoroFront, KokoroStreamer
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.engines.onnx import SessionFactory
from voxserve.engines.piper_stream import HOP as PIPER_HOP
from voxserve.engines.piper_stream import PiperStreamer
from voxserve.engines.vocoder_stats import Corrections
from voxserve.engines.windowing import CrossfadeJoiner, Window, iter_windows
from voxserve.errors import InvalidInput
from voxserve.models import ModelStore
from voxserve.models.graphs import build_split_graphs
from voxserve.runtime import Runtime

if TYPE_CHECKING:
    from tests.conftest import PiperIds

Sentence = tuple[KokoroFront, np.ndarray]  # its front and its whole decode
SENTENCE = "jˌʊɹ ˈɔɹdəɹ ʃˈɪpt ðɪs mˈɔɹnɪŋ ænd ʃˌʊd əɹˈIv ˌɔn θˈɜɹzdˌA."  # "Your order shipped ... Thursday."
PIPER_IPA = "jʊɹ ˈɔːɹdɚ ʃˈɪpt ðɪs mˈɔːɹnɪŋ ænd ʃˌʊd ɚɹˈaɪv ˌɔn θˈɜːzdeɪ."


@pytest.mark.parametrize(
    ("frames", "first", "size"), [(1, 10, 40), (10, 10, 40), (11, 10, 40), (154, 24, 40), (500, 10, 60)]
)
def test_iter_windows_tiles_all_frames(frames: int, first: int, size: int) -> None:
    windows = list(iter_windows(frames, first, size, 8, 8))
    assert windows[0].start == 0 and windows[-1].end == frames
    assert windows[0].end == min(first, frames)
    for before, after in itertools.pairwise(windows):
        assert before.end == after.start
    for w in windows:
        assert max(0, w.start - 8) == w.ctx_start and min(frames, w.end + 8) == w.ctx_end
        assert w.end - w.start <= max(first, size + size // 2)


def test_iter_windows_rejects_nonsense() -> None:
    with pytest.raises(InvalidInput):
        list(iter_windows(100, 0, 40, 8, 8))


def test_joiner_reassembles_a_signal_exactly() -> None:
    """Windows cut from one signal (context included) join back into that signal: the fades sum to one."""
    rng = np.random.default_rng(3)
    hop = 100
    signal = rng.standard_normal(57 * hop).astype(np.float32)
    joiner = CrossfadeJoiner(hop, crossfade=120)
    pieces = []
    for w in iter_windows(57, 5, 20, 2, 2):
        pieces.append(joiner.push(w, signal[w.ctx_start * hop : w.ctx_end * hop]))
    assert [len(p) for p in pieces] == [(w.end - w.start) * hop for w in iter_windows(57, 5, 20, 2, 2)]
    np.testing.assert_allclose(np.concatenate(pieces), signal, atol=1e-6)


def test_joiner_crossfades_a_step() -> None:
    hop = 10
    joiner = CrossfadeJoiner(hop, crossfade=10)
    a = joiner.push(Window(0, 2, 0, 3), np.zeros(30, dtype=np.float32))
    b = joiner.push(Window(2, 4, 1, 4), np.ones(30, dtype=np.float32))
    assert np.all(a == 0)
    ramp = b[:10]
    assert np.all(np.diff(ramp) > 0) and 0 < ramp[0] < 0.05 and 0.95 < ramp[-1] < 1
    assert np.all(b[10:] == 1)


@pytest.fixture(scope="module")
def split_dir(model_store: ModelStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split")
    build_split_graphs(model_store.kokoro_model(), out)
    build_split_graphs(model_store.piper_model(), out)
    return out


@pytest.fixture(scope="module")
def kokoro(split_dir: Path) -> KokoroStreamer:
    return KokoroStreamer(SessionFactory(["cpu"], 2), split_dir)


@pytest.fixture(scope="module")
def sentence(kokoro: KokoroStreamer, model_store: ModelStore) -> Sentence:
    ids = np.array([KOKORO_VOCAB[c] for c in SENTENCE], dtype=np.int64)
    voice = np.fromfile(model_store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)
    front = kokoro.front(ids, voice[len(ids)], 1.0)
    return front, kokoro.decode(front)


def _scores(reference: np.ndarray, test: np.ndarray) -> tuple[float, float]:
    ref16, test16 = resample_poly(reference, 2, 3), resample_poly(test, 2, 3)
    return float(pesq(16_000, ref16, test16, "wb")), float(stoi(ref16, test16, 16_000))


def test_kokoro_pieces_are_contiguous_with_metadata(kokoro: KokoroStreamer, sentence: Sentence) -> None:
    front, whole = sentence
    pieces = list(kokoro.decode_windows(front, first_window_frames=10, window_frames=40))
    assert len(pieces) >= 3
    assert sum(len(p.samples) for p in pieces) == len(whole) == front.frames * KOKORO_HOP
    first, last = pieces[0], pieces[-1]
    assert first.first and not first.last and last.last and not any(p.first for p in pieces[1:])
    assert first.lead_in == front.durations[0] * KOKORO_HOP and last.tail == front.durations[-1] * KOKORO_HOP
    assert first.phoneme_durations is not None and len(first.phoneme_durations) == len(SENTENCE)
    assert first.lead_in is not None and last.tail is not None
    assert first.lead_in + int(first.phoneme_durations.sum()) + last.tail == len(whole)
    # the first piece holds at most ~0.3 s of speech after the leading pad
    assert 0 < len(first.samples) - first.lead_in <= int(0.3 * 24_000)


def test_kokoro_windows_sound_like_the_whole_sentence(
    kokoro: KokoroStreamer, sentence: Sentence, split_dir: Path
) -> None:
    front, whole = sentence
    # the server's path: the voice has spoken before (warm-up), so its learned vocoder statistics apply
    for _ in kokoro.decode_windows(front, 400, 400, voice="af_heart"):
        pass
    windowed = np.concatenate([p.samples for p in kokoro.decode_windows(front, 16, 20, growth=1.4, voice="af_heart")])
    quality, intelligibility = _scores(whole, windowed)
    assert quality >= 2.8 and intelligibility >= 0.96, (quality, intelligibility)

    plain = KokoroStreamer(
        SessionFactory(["cpu"], 2),
        split_dir,
        corrections=Corrections(carry_phase=False, sentence_stats=False, running_stats=False, voice_stats=False),
    )
    naive = np.concatenate([p.samples for p in plain.decode_windows(front, 16, 20, growth=1.4)])
    naive_quality, _ = _scores(whole, naive)
    assert quality > naive_quality + 0.5, (quality, naive_quality)


def test_kokoro_voice_statistics_bring_windows_closer_to_the_whole(
    split_dir: Path, sentence: Sentence, model_store: ModelStore
) -> None:
    """After the voice has spoken another sentence, its learned vocoder statistics steady small windows."""
    front, whole = sentence
    fresh = KokoroStreamer(SessionFactory(["cpu"], 2), split_dir)
    cold = np.concatenate([p.samples for p in fresh.decode_windows(front, 10, 20, voice="af_heart")])
    assert fresh.voice_stats is not None and fresh.voice_stats.frames_seen("af_heart") > 0
    other = "ðə kwˈɪk bɹˈWn fˈɑks ʤˈʌmps ˌOvəɹ ðə lˈAzi dˈɔɡ."
    ids = np.array([KOKORO_VOCAB[c] for c in other], dtype=np.int64)
    voice = np.fromfile(model_store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)
    for _ in fresh.decode_windows(fresh.front(ids, voice[len(ids)], 1.0), 200, 200, voice="af_heart"):
        pass
    warm = np.concatenate([p.samples for p in fresh.decode_windows(front, 10, 20, voice="af_heart")])
    cold_quality, _ = _scores(whole, cold)
    warm_quality, warm_intelligibility = _scores(whole, warm)
    assert warm_quality >= cold_quality + 0.3 and warm_intelligibility >= 0.95, (cold_quality, warm_quality)


def test_kokoro_capped_pads(kokoro: KokoroStreamer, model_store: ModelStore) -> None:
    ids = np.array([KOKORO_VOCAB[c] for c in "hˈɛlOʊ."], dtype=np.int64)
    voice = np.fromfile(model_store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)
    front = kokoro.front(ids, voice[len(ids)], 1.0, max_pad_frames=3)
    assert front.durations[0] <= 3 and front.durations[-1] <= 3
    assert front.f0.shape[1] == 2 * front.frames
    with pytest.raises(InvalidInput):
        kokoro.front(np.array([], dtype=np.int64), voice[1], 1.0)


def test_piper_windows_match_whole_decode(split_dir: Path, model_store: ModelStore, piper_ids: PiperIds) -> None:
    config = json.loads(model_store.piper_config().read_text())
    ids = piper_ids(PIPER_IPA)
    streamer = PiperStreamer(SessionFactory(["cpu"], 2), split_dir, config["audio"]["sample_rate"])
    front = streamer.front(np.array(ids), noise_scale=0.0, noise_w=0.0)
    whole = streamer.decode(front)
    pieces = list(streamer.decode_windows(front, first_window_frames=24, window_frames=60))
    assert len(pieces) >= 3
    windowed = np.concatenate([p.samples for p in pieces])
    np.testing.assert_allclose(windowed, whole, atol=1e-4)
    first = pieces[0]
    assert first.phoneme_durations is not None
    assert first.lead_in is not None and pieces[-1].tail is not None
    assert (
        first.lead_in + int(first.phoneme_durations.sum()) + pieces[-1].tail == len(whole) == front.frames * PIPER_HOP
    )
    assert len(first.samples) - first.lead_in == 24 * PIPER_HOP


def test_predicted_statistics_bring_a_first_segment_closer_to_the_whole(runtime: Runtime) -> None:
    """The server's path: a stream's first sentence in small windows, its vocoder statistics predicted
    from its frame-rate ones (learned at start-up), against starting from the voice's average."""
    engine = runtime.engines["kokoro"]
    assert isinstance(engine, KokoroEngine) and engine.streamer is not None
    streamer, windows = engine.streamer, runtime.window_config()
    assert streamer.stats_model is not None and streamer.voice_stats is not None
    assert all(streamer.stats_model.knows(voice.id) for voice in engine.voices())
    frame_s = KOKORO_HOP / 24_000
    first, following, largest = windows.plan(windows.first_s, frame_s)
    model, book = streamer.stats_model, streamer.voice_stats
    scores: dict[str, list[float]] = {"predicted": [], "voice average": []}
    texts = ("Your order shipped this morning and should arrive on Thursday.", "Sure, I can help with that.")
    try:
        for text in texts:
            phonemes = " ".join(s.phonemes for s in runtime.frontend.phonemize(text, "en-us"))
            ids = np.array([KOKORO_VOCAB[c] for c in phonemes], dtype=np.int64)
            front = streamer.front(
                ids, engine.style_tables.style("af_heart", len(ids)), max_pad_frames=4, max_lead_frames=2
            )
            whole = streamer.decode(front)
            for start in scores:
                streamer.stats_model = model if start == "predicted" else None
                streamer.voice_stats = book.snapshot()  # the voice book learns from every window
                pieces = streamer.decode_windows(
                    front, first, following, growth=windows.growth, max_window_frames=largest, voice="af_heart",
                    early_stats=True, first_context_frames=windows.frames(windows.first_context_s, frame_s),
                )  # fmt: skip
                scores[start].append(_scores(whole, np.concatenate([p.samples for p in pieces]))[0])
    finally:
        streamer.stats_model, streamer.voice_stats = model, book
    print(scores)
    assert min(scores["predicted"]) >= 3.9, scores
    assert sum(scores["predicted"]) > sum(scores["voice average"]) + 0.2, scores
