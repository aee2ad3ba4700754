from __future__ import annotations

import pytest

from voxserve.text.normalize_zh import ChineseNormalizer, has_han


@pytest.fixture(scope="module")
def normalizer() -> ChineseNormalizer:
    return ChineseNormalizer()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我有3个苹果。", "我有三个苹果。"),
        ("今天是2024年12月25日。", "今天是二零二四年十二月二十五日。"),
        ("气温-3°C。", "气温零下三度。"),
        ("价格是12.5元，打了50%折扣。", "价格是十二点五元，打了百分之五十折扣。"),
        ("时间是15:30。", "时间是十五点半。"),
        ("這是繁體字。", "这是繁体字。"),
    ],
)
def test_chinese_numbers_dates_units(normalizer: ChineseNormalizer, text: str, expected: str) -> None:
    assert normalizer(text) == expected


def test_latin_words_are_left_for_the_english_g2p(normalizer: ChineseNormalizer) -> None:
    out = normalizer("我用 iPhone 15 和 Google Maps。")
    assert "iPhone" in out and "Google Maps" in out
    assert "十五" in out


def test_has_han() -> None:
    assert has_han("abc中") and not has_han("abc")
