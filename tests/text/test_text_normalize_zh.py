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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("共有1,234,567人。", "共有一百二十三万四千五百六十七人。"),  # not 一,二三四,五百六十七
        ("共有10,000人", "共有一万人"),
        ("温度是-1,234度", "温度是负一千二百三十四度"),
        ("数字1,2,3", "数字一,二,三"),  # not a grouped number
    ],
)
def test_thousands_separators_are_one_number(normalizer: ChineseNormalizer, text: str, expected: str) -> None:
    assert normalizer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("他跑了5km", "他跑了五千米"),  # not 五 + English "km"
        ("他跑了5 km，很累。", "他跑了五千米，很累。"),
        ("重12kg。", "重十二千克。"),
        ("长3.5m的绳子", "长三点五米的绳子"),
        ("等了3s", "等了三秒"),
        ("速度60km/h", "速度六十千米每小时"),
    ],
)
def test_units_after_numbers_are_read_in_chinese(normalizer: ChineseNormalizer, text: str, expected: str) -> None:
    assert normalizer(text) == expected


def test_letters_after_a_latin_word_stay_english(normalizer: ChineseNormalizer) -> None:
    out = normalizer("我用 iPhone 5s 和 Google Maps。")
    assert "iPhone" in out and "五s" in out and "秒" not in out
    assert normalizer("我买了3 cups of tea") == "我买了三 cups of tea"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("价格是$5.99。", "价格是五点九九美元。"),  # not 价格是$五点九九 (the $ is dropped later)
        ("价格是$1,299。", "价格是一千二百九十九美元。"),
        ("门票€30。", "门票三十欧元。"),
    ],
)
def test_currency_signs_are_read(normalizer: ChineseNormalizer, text: str, expected: str) -> None:
    assert normalizer(text) == expected
