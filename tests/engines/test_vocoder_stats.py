from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from voxserve.engines.vocoder_stats import RunningStats, VoiceStatsBook

NAMES = ["stat_in_a", "stat_in_b"]


def _means(value: float) -> dict[str, np.ndarray]:
    return {name: np.full((1, 3, 1), value, dtype=np.float32) for name in NAMES}


def _prior(book: VoiceStatsBook, voice: str) -> tuple[dict[str, np.ndarray], int]:
    found = book.prior(voice)
    assert found is not None
    return found


def test_running_stats_start_neutral_and_weigh_by_frames() -> None:
    stats = RunningStats(NAMES)
    feeds = stats.feeds(10)
    assert float(feeds["mix_vocoder"][0]) == 0.0
    stats.add(_means(1.0), 10)
    stats.add(_means(4.0), 30)
    feeds = stats.feeds(40)
    np.testing.assert_allclose(feeds["stat_in_a"], 3.25)  # (1*10 + 4*30) / 40
    assert float(feeds["mix_vocoder"][0]) == pytest.approx(0.5)


def test_running_stats_seeded_with_a_prior() -> None:
    stats = RunningStats(NAMES, ({name: np.full((1, 3, 1), 2.0) for name in NAMES}, 100))
    feeds = stats.feeds(25)
    np.testing.assert_allclose(feeds["stat_in_b"], 2.0)
    assert float(feeds["mix_vocoder"][0]) == pytest.approx(100 / 125)


def test_voice_book_learns_per_voice_and_caps_the_prior_weight() -> None:
    book = VoiceStatsBook(prior_frames=100, memory_frames=1000)
    assert book.prior("af_heart") is None
    book.record("af_heart", _means(1.0), 30)
    means, weight = _prior(book, "af_heart")
    assert weight == 30
    np.testing.assert_allclose(means["stat_in_a"], 1.0)
    book.record("af_heart", _means(3.0), 30)
    means, weight = _prior(book, "af_heart")
    assert weight == 60
    np.testing.assert_allclose(means["stat_in_a"], 2.0)
    book.record("af_heart", _means(2.0), 500)
    assert _prior(book, "af_heart")[1] == 100
    book.record("am_adam", _means(5.0), 40)
    means, weight = _prior(book, "am_adam")
    np.testing.assert_allclose(means["stat_in_a"], 5.0)
    assert weight == 40


def test_voice_book_falls_back_to_the_average_over_voices() -> None:
    book = VoiceStatsBook(prior_frames=100, memory_frames=10_000)
    assert book.prior("bf_emma") is None
    book.record("af_heart", _means(1.0), 100)
    book.record("am_adam", _means(3.0), 300)
    means, weight = _prior(book, "bf_emma")
    np.testing.assert_allclose(means["stat_in_b"], 2.5)
    assert weight == 100


def test_voice_book_forgets_beyond_its_memory() -> None:
    book = VoiceStatsBook(prior_frames=100, memory_frames=200)
    book.record("v", _means(0.0), 200)
    book.record("v", _means(10.0), 200)  # fills the whole memory: the old average is gone
    means, _ = _prior(book, "v")
    np.testing.assert_allclose(means["stat_in_a"], 10.0)
    book.record("v", _means(0.0), 100)  # half the memory
    means, _ = _prior(book, "v")
    np.testing.assert_allclose(means["stat_in_a"], 5.0)


def test_voice_book_is_safe_across_threads() -> None:
    book = VoiceStatsBook(prior_frames=100, memory_frames=10**9)

    def work(value: float) -> None:
        for _ in range(200):
            book.record("v", _means(value), 1)

    threads = [threading.Thread(target=work, args=(float(v),)) for v in (1, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert book.frames_seen("v") == 400
    means, _ = _prior(book, "v")
    np.testing.assert_allclose(means["stat_in_a"], 2.0)


def test_running_stats_feed_the_mix_input_they_are_for() -> None:
    stats = RunningStats(["stat_in_0"], ({"stat_in_0": np.full((1, 3, 1), 2.0)}, 30), mix="mix_frame")
    feeds = stats.feeds(10)
    assert set(feeds) == {"stat_in_0", "mix_frame"}
    assert feeds["mix_frame"][0] == 0.75 and np.all(feeds["stat_in_0"] == 2.0)


def test_the_book_is_saved_and_reloaded_only_for_the_same_tag(tmp_path: Path) -> None:
    book = VoiceStatsBook()
    book.record("af_heart", {"stat_in_7": np.full((1, 4, 1), 0.5)}, 80)
    path = tmp_path / "voice_stats.npz"
    book.save(path, "graphs-A")
    again = VoiceStatsBook()
    assert not again.load(path, "graphs-B")  # built from other graphs: stale
    assert again.prior("af_heart") is None
    assert again.load(path, "graphs-A")
    means, frames = _prior(again, "af_heart")
    assert frames == 80 and np.allclose(means["stat_in_7"], 0.5)
    assert not VoiceStatsBook().load(tmp_path / "absent.npz", "graphs-A")
