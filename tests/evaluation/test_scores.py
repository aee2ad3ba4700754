"""The evaluation's arithmetic: WER/CER normalization, alignment, seam statistics."""

from __future__ import annotations

import numpy as np
import pytest

from voxserve.evaluation.asr import cer, wer
from voxserve.evaluation.fidelity import align, seams, voiced_spans


def test_wer_ignores_case_and_punctuation() -> None:
    assert wer("Sure, I can help with that.", "sure i can help with that") == 0.0
    assert wer("the cat sat", "the cat sat down") == pytest.approx(1 / 3)
    assert wer("the cat sat", "a cat") == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        wer("...", "anything")


def test_cer_compares_chinese_in_simplified_and_ignores_spaces_where_unwritten() -> None:
    assert cer("请问最近的地铁站在哪里？", "請問最近的地鐵站在哪裡", "zh") == 0.0
    assert cer("こんにちは、今日は", "こんにちは 今日は", "ja") == 0.0
    assert cer("hola amigo", "hola amiga", "es") == pytest.approx(1 / 10)
    assert cer("hola amigo", "holaamigo", "es") == pytest.approx(1 / 10)  # Spanish writes the space


def _tone(seconds: float, rate: int, freq: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * freq * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def test_align_undoes_a_delay_and_per_stretch_pause_changes() -> None:
    rate = 16_000
    a, b, gap = _tone(0.5, rate), _tone(0.4, rate, 330.0), np.zeros(int(0.2 * rate), np.float32)
    reference = np.concatenate([a, gap, b])
    # delayed by 7 ms and with a longer pause between the two stretches
    test = np.concatenate([np.zeros(112, np.float32), a, gap, gap, b])
    assert len(voiced_spans(reference, rate)) == len(voiced_spans(test, rate)) == 2
    ref, out = align(reference, test, rate)
    assert len(ref) == len(out)
    assert np.corrcoef(ref, out)[0, 1] > 0.99


def test_seams_find_a_click_at_a_join_and_none_in_a_smooth_signal() -> None:
    rate = 24_000
    smooth = _tone(1.0, rate)
    joins = [4_800, 9_600, 14_400]
    clean = seams(smooth, joins, rate)
    assert clean.joins == 3 and clean.clicks == 0
    clicked = smooth.copy()
    clicked[9_600:] += 0.2  # a step where the second chunk begins
    hit = seams(clicked, joins, rate)
    assert hit.clicks == 1 and hit.p99_ratio is not None and hit.p99_ratio > 4
    assert hit.baseline_click_share is not None and hit.baseline_click_share < 0.05
