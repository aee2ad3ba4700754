"""Japanese readings: particles, 今日は, numbers and counters (the kana that espeak is given)."""

from __future__ import annotations

import pytest

from voxserve.text.g2p_ja import JapaneseG2P
from voxserve.text.numbers_ja import int_kana, number_kana

pytest.importorskip("pykakasi")


@pytest.fixture(scope="module")
def g2p() -> JapaneseG2P:
    return JapaneseG2P("misaki")


def spoken(g2p: JapaneseG2P, text: str) -> list[str]:
    return [kana for _, kana in g2p.readings(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今日はいい天気です", ["きょう", "わ", "いい", "てんき", "です"]),  # not こんにちわ いい…
        ("今日は3時に", ["きょう", "わ", "さんじ", "に"]),
        ("今日は", ["こんにちわ"]),  # the greeting when it stands alone
        ("今日は、元気？", ["こんにちわ", ",", "げんき", "?"]),
        ("こんにちは", ["こんにちわ"]),
    ],
)
def test_kyou_wa_is_the_greeting_only_when_alone(g2p: JapaneseG2P, text: str, expected: list[str]) -> None:
    assert spoken(g2p, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("これは", "これわ"),
        ("彼は", "かれわ"),
        ("それは", "それわ"),
        ("学校では", "でわ"),
        ("大阪には", "にわ"),
        ("それとは", "それとわ"),
        ("私は", "わ"),
    ],
)
def test_particle_ha_attached_to_a_word_is_read_wa(g2p: JapaneseG2P, text: str, expected: str) -> None:
    assert spoken(g2p, text)[-1] == expected


@pytest.mark.parametrize("text", ["はは", "あはは", "いろは", "アロハ"])
def test_words_ending_in_the_sound_ha_keep_it(g2p: JapaneseG2P, text: str) -> None:
    assert spoken(g2p, text)[-1].endswith("は")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("25歳", "にじゅうごさい"),  # not にじゅうご とし
        ("1歳", "いっさい"),
        ("20歳", "はたち"),
        ("3時間", "さんじかん"),
        ("4時", "よじ"),
        ("9時", "くじ"),
        ("1分", "いっぷん"),
        ("3分", "さんぷん"),
        ("5分", "ごふん"),
        ("10分", "じゅっぷん"),
        ("100円", "ひゃくえん"),
        ("4円", "よえん"),
        ("2024年", "にせんにじゅうよねん"),
        ("4月", "しがつ"),
        ("12月", "じゅうにがつ"),
        ("3日", "みっか"),
        ("6回", "ろっかい"),
        ("8個", "はっこ"),
        ("1本", "いっぽん"),
        ("3本", "さんぼん"),
        ("6本", "ろっぽん"),
        ("4本", "よんほん"),
        ("3枚", "さんまい"),
        ("1人", "ひとり"),
        ("2人", "ふたり"),
        ("3人", "さんにん"),
        ("4人", "よにん"),
        ("1,234円", "せんにひゃくさんじゅうよえん"),
        ("1億2000万円", "いちおくにせんまんえん"),
        ("１００円", "ひゃくえん"),  # full-width digits
    ],
)
def test_numbers_with_counters_are_one_reading(g2p: JapaneseG2P, text: str, expected: str) -> None:
    assert g2p.readings(text) == [(text, expected)]


def test_counter_is_split_from_the_particle_after_it(g2p: JapaneseG2P) -> None:
    assert spoken(g2p, "3時に") == ["さんじ", "に"]  # not さん ときに


def test_dates_and_fractions(g2p: JapaneseG2P) -> None:
    assert spoken(g2p, "1月1日") == ["いちがつ", "ついたち"]
    assert spoken(g2p, "3分の1") == ["さんぶん", "の", "いち"]
    assert spoken(g2p, "5分の休憩") == ["ごふん", "の", "きゅうけい"]


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "ぜろ"),
        (10, "じゅう"),
        (100, "ひゃく"),
        (300, "さんびゃく"),
        (600, "ろっぴゃく"),
        (800, "はっぴゃく"),
        (1000, "せん"),
        (3000, "さんぜん"),
        (8000, "はっせん"),
        (10000, "いちまん"),
        (11000, "いちまんせん"),
        (10_000_000, "いっせんまん"),
        (99_999_999, "きゅうせんきゅうひゃくきゅうじゅうきゅうまんきゅうせんきゅうひゃくきゅうじゅうきゅう"),
        (100_000_000, "いちおく"),
        (10**12, "いっちょう"),
    ],
)
def test_int_kana(n: int, expected: str) -> None:
    assert int_kana(n) == expected


def test_number_kana_reads_decimals_and_separators() -> None:
    assert number_kana("3.5") == "さんてんご"
    assert number_kana("1.5") == "いってんご"
    assert number_kana("0.25") == "れいてんにご"
    assert number_kana("1,234,567") == "ひゃくにじゅうさんまんよんせんごひゃくろくじゅうなな"


def test_digits_in_sentences_are_read_as_numbers(g2p: JapaneseG2P) -> None:
    assert spoken(g2p, "3.5キロ") == ["さんてんご", "きろ"]
    assert "ひゃくえん" in spoken(g2p, "これは100円です。")
