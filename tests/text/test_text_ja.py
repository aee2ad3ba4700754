"""Japanese readings (OpenJTalk + the counter table) and the phonemes Kokoro's Japanese voices know."""

from __future__ import annotations

import pytest

from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.text.g2p_ja import JapaneseG2P
from voxserve.text.kana_ipa import SINGLE, kana_to_ipa, lengthen
from voxserve.text.numbers_ja import int_kana, number_kana


@pytest.fixture(scope="module")
def g2p() -> JapaneseG2P:
    return JapaneseG2P("misaki")


def spoken(g2p: JapaneseG2P, text: str) -> list[str]:
    return [kana for _, kana in g2p.readings(text)]


def phonemes(g2p: JapaneseG2P, text: str) -> str:
    return " ".join(w.phonemes for w in g2p(text))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("明日の朝", ["あした", "の", "あさ"]),  # not みょうにち / あす
        ("雨が降る", ["あめ", "が", "ふる"]),  # not くだる / おりる
        ("午後から", ["ごご", "から"]),  # not ごご + 空 (から)
        ("東京へ行きます", ["とーきょー", "え", "いき", "ます"]),
        ("本を読む", ["ほん", "お", "よむ"]),
    ],
)
def test_words_read_in_context(g2p: JapaneseG2P, text: str, expected: list[str]) -> None:
    assert spoken(g2p, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("今日はいい天気です", ["きょー", "わ", "いい", "てんき", "です"]),
        ("こんにちは", ["こんにちわ"]),
        ("私は学生です", ["わたし", "わ", "がくせー", "です"]),
        ("学校では", ["がっこー", "で", "わ"]),
    ],
)
def test_particles_are_read_as_spoken(g2p: JapaneseG2P, text: str, expected: list[str]) -> None:
    assert spoken(g2p, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("母は", ["はは", "わ"]),
        ("あはは", ["あはは"]),
        ("いろは", ["いろは"]),
        ("ははは、", ["は", "は", "は", ","]),  # laughter: no word for a particle to follow
    ],
)
def test_words_with_the_sound_ha_keep_it(g2p: JapaneseG2P, text: str, expected: list[str]) -> None:
    assert spoken(g2p, text) == expected


def test_long_vowels_and_small_tsu(g2p: JapaneseG2P) -> None:
    assert phonemes(g2p, "東京") == "toːkʲoː"
    assert phonemes(g2p, "コーヒー") == "koːçiː"
    assert phonemes(g2p, "雨が降るでしょう") == "ame ɡa ɸɯɾɯ deɕoː"  # でしょ + う is one long vowel
    assert phonemes(g2p, "ちょっと待って") == "ʨoʔto maʔte"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("25歳", "にじゅーごさい"),
        ("20歳", "はたち"),
        ("3時間", "さんじかん"),
        ("4時", "よじ"),
        ("9時", "くじ"),
        ("1分", "いっぷん"),
        ("3分", "さんぷん"),
        ("10分", "じゅっぷん"),
        ("100円", "ひゃくえん"),
        ("4円", "よえん"),
        ("2024年", "にせんにじゅーよねん"),
        ("4月", "しがつ"),
        ("3日", "みっか"),
        ("6回", "ろっかい"),
        ("8個", "はっこ"),
        ("1本", "いっぽん"),
        ("3本", "さんぼん"),
        ("4本", "よんほん"),
        ("1人", "ひとり"),
        ("4人", "よにん"),
        ("1,234円", "せんにひゃくさんじゅーよえん"),
        ("1億2000万円", "いちおくにせんまんえん"),
        ("１００円", "ひゃくえん"),  # full-width digits
    ],
)
def test_numbers_with_counters_are_one_reading(g2p: JapaneseG2P, text: str, expected: str) -> None:
    assert g2p.readings(text) == [(text, expected)]


def test_counters_outside_the_table_are_read_by_the_analyzer(g2p: JapaneseG2P) -> None:
    assert "".join(spoken(g2p, "8冊")) == "はっさつ"
    assert "".join(spoken(g2p, "2つ")) == "ふたつ"
    assert "".join(spoken(g2p, "3.5キロ")) == "さんてんごきろ"


def test_dates_and_fractions(g2p: JapaneseG2P) -> None:
    assert spoken(g2p, "1月1日") == ["いちがつ", "ついたち"]
    assert spoken(g2p, "3分の1") == ["さんぶん", "の", "いち"]
    assert spoken(g2p, "今日は2024年3月5日") == ["きょー", "わ", "にせんにじゅーよねん", "さんがつ", "いつか"]


def test_punctuation_becomes_ascii_marks(g2p: JapaneseG2P) -> None:
    words = g2p("「はい」と言った。本当？")
    assert [w.phonemes for w in words] == ["“", "hai", "”", "to", "iʔta", ".", "hontoː", "?"]
    assert not words[0].space_after and not words[1].space_after  # “hai”


def test_unknown_words_are_read_from_their_kana_or_letters(g2p: JapaneseG2P) -> None:
    assert phonemes(g2p, "ぴよぴよ") == "pʲijopʲijo"
    assert "".join(spoken(g2p, "Johnと話した")).startswith("じょん")
    assert spoken(g2p, "𠮷") == []  # no reading at all: left out (and logged), never spelled as noise


def test_every_phoneme_is_in_kokoros_vocabulary(g2p: JapaneseG2P) -> None:
    symbols = {ch for kana in SINGLE for ch in kana_to_ipa(kana)}
    for text in [
        "キャッシュ",
        "ティーンエイジャー",
        "ファイル",
        "ウィキ",
        "ヴァイオリン",
        "クォーツ",
        "ツィター",
        "デュエット",
    ]:
        symbols |= set(kana_to_ipa(text))
    symbols |= set(phonemes(g2p, "新聞と漢字と銀行、みんなで散歩。"))
    assert symbols - set(KOKORO_VOCAB) == set()


@pytest.mark.parametrize(
    ("kana", "ipa"),
    [
        ("シンブン", "ɕimbɯɴ"),  # ン before b → m
        ("ギンコー", "ɡʲiŋkoː"),  # before k → ŋ
        ("サンジ", "saɲʥi"),  # before ʥ → ɲ
        ("ミンナ", "mʲinna"),  # before n → n
        ("ホン", "hoɴ"),  # word-final → ɴ
        ("ティー", "tʲiː"),
        ("ファイル", "ɸaiɾɯ"),
        ("シュクダイ", "ɕɨkɯdai"),
        ("ツヅク", "ʦɨzɨkɯ"),
        ("ワタシ", "βataɕi"),
    ],
)
def test_kana_to_ipa(kana: str, ipa: str) -> None:
    assert kana_to_ipa(kana) == ipa


def test_lengthen_matches_the_analyzers_spelling() -> None:
    assert lengthen("じゅう") == "じゅー"
    assert lengthen("いっちょう") == "いっちょー"
    assert lengthen("とおか") == "とーか"
    assert lengthen("れいてんご") == "れーてんご"
    assert lengthen("さんえん") == "さんえん"


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "ぜろ"),
        (10, "じゅう"),
        (300, "さんびゃく"),
        (600, "ろっぴゃく"),
        (3000, "さんぜん"),
        (8000, "はっせん"),
        (10000, "いちまん"),
        (10_000_000, "いっせんまん"),
        (100_000_000, "いちおく"),
        (10**12, "いっちょう"),
    ],
)
def test_int_kana(n: int, expected: str) -> None:
    assert int_kana(n) == expected


def test_number_kana_reads_decimals_and_separators() -> None:
    assert number_kana("3.5") == "さんてんご"
    assert number_kana("0.25") == "れいてんにご"
    assert number_kana("1,234,567") == "ひゃくにじゅうさんまんよんせんごひゃくろくじゅうなな"


def test_piper_alphabet_speaks_the_readings_with_espeak() -> None:
    words = JapaneseG2P("espeak")("明日の朝")
    assert [w.text for w in words] == ["明日", "の", "朝"]
    assert all(w.phonemes for w in words)
