"""The packed word table (voxserve.text.packed) answers exactly what the dict it was built from does,
and the G2Ps that hold one (misaki's English lexicons, jieba's prefix dictionary) read the same words."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from voxserve.text.packed import PackedMap

WORDS = st.text(min_size=0, max_size=12)
TAGGED = st.dictionaries(st.sampled_from(["DEFAULT", "VERB", "NOUN", "VBD"]), st.one_of(st.none(), WORDS), min_size=1)


def assert_same(packed: PackedMap, table: dict[str, Any], absent: list[str]) -> None:
    assert len(packed) == len(table)
    assert set(packed) == table.keys()
    for i, (key, value) in enumerate(table.items()):
        assert packed.get(key, "missing") == value
        if i < 1000:  # the other ways in share get()'s lookup
            assert key in packed
            assert packed[key] == value
    for key in absent:
        if key not in table:
            assert key not in packed
            assert packed.get(key, "missing") == "missing"
            with pytest.raises(KeyError):
                packed[key]


@given(st.dictionaries(WORDS, st.one_of(WORDS, TAGGED)), st.lists(WORDS, max_size=20))
def test_text_and_tagged_values_read_back_as_the_dict_holds_them(table: dict[str, Any], absent: list[str]) -> None:
    assert_same(PackedMap(table), table, absent)


@given(st.dictionaries(WORDS, st.integers(-(2**63), 2**63 - 1)), st.lists(WORDS, max_size=20))
def test_integer_values_read_back_as_the_dict_holds_them(table: dict[str, int], absent: list[str]) -> None:
    packed = PackedMap(table)
    assert_same(packed, table, absent)
    assert packed._ints is not None or not table  # kept as an integer array, not as text


class Colliding(str):
    """A word whose hash is every other's: the table must still tell them apart by the word."""

    def __hash__(self) -> int:
        return 7


def test_words_of_one_hash_are_told_apart_by_the_word() -> None:
    table: dict[str, str] = {Colliding(word): word.upper() for word in ["alpha", "beta", "gamma", ""]}
    packed = PackedMap(table)
    for word in ["alpha", "beta", "gamma", ""]:
        assert packed[Colliding(word)] == word.upper()
    assert Colliding("delta") not in packed
    assert packed.get(Colliding("alph")) is None


def test_an_unhashable_key_is_simply_absent() -> None:
    packed = PackedMap({"a": "b"})
    assert [] not in packed
    assert packed.get([]) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("british", [False, True])
def test_the_english_g2p_reads_every_word_of_misakis_lexicon(british: bool) -> None:
    from misaki import en

    from voxserve.text.g2p_en import EnglishG2P

    g2p = EnglishG2P(british=british)
    reference = en.Lexicon(british)
    packed = g2p._g2p.lexicon
    assert isinstance(packed.golds, PackedMap) and isinstance(packed.silvers, PackedMap)
    assert_same(packed.golds, reference.golds, ["kokoro", "Zyzzyvas", "x" * 40])
    assert_same(packed.silvers, reference.silvers, ["kokoro", "Zyzzyvas"])


def test_the_chinese_g2p_reads_jiebas_whole_prefix_dictionary(tmp_path: Any) -> None:
    import jieba

    from voxserve.text.g2p_zh import ChineseG2P

    g2p = ChineseG2P(cache_dir=tmp_path)
    reference = jieba.Tokenizer()
    reference.tmp_dir = str(tmp_path)
    reference.initialize()
    assert isinstance(g2p._tokenizer.FREQ, PackedMap)
    assert_same(g2p._tokenizer.FREQ, reference.FREQ, ["不存在的词语", "zz"])
    sentence = "我们今天下午去北京大学图书馆看书，然后一起吃晚饭。"
    assert g2p._tokenizer.lcut(sentence) == reference.lcut(sentence)
