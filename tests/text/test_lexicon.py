"""Pronunciation dictionaries (voxserve.text.lexicon): parsing, checking, applying."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voxserve.errors import InvalidInput, UnsupportedLanguage
from voxserve.text import Frontend
from voxserve.text.lexicon import MAX_REQUEST_ENTRIES, apply_lexicon, for_voice, load_lexicon, parse_entries


def test_words_become_phoneme_spans_or_text() -> None:
    entries = parse_entries(
        [
            {"word": "Kokoro", "phonemes": "kˈOkəɹO"},
            {"word": "k8s", "text": "kubernetes"},
            {"word": "a.i", "text": "A I"},
        ]
    )
    text = "Ask kokoro about K8s, not k8see or [Kokoro](/kˈɑ/), and a.i."
    assert apply_lexicon(text, entries) == (
        "Ask [kokoro](/kˈOkəɹO/) about kubernetes, not k8see or [Kokoro](/kˈɑ/), and A I."
    )


def test_regex_entries_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.json"
    path.write_text(
        json.dumps(
            {
                "en-US": [{"regex": r"\bv(\d+)\.(\d+)\b", "text": r"version \1 point \2"}],
                "*": [{"word": "Xyzzo", "phonemes": "zˈɪzO", "alphabet": "misaki"}],
            }
        )
    )
    lexicon = load_lexicon(path)
    assert set(lexicon) == {"en-us", "*"}
    assert apply_lexicon("Update to v2.15 now.", lexicon["en-us"]) == "Update to version 2 point 15 now."
    assert for_voice(lexicon["*"], "espeak", strict=False) == ()  # another alphabet's entry is left out
    path.write_text(json.dumps({"en-us": [{"word": "Xyzzo", "phonemes": "zˈɪzO"}]}))
    with pytest.raises(InvalidInput, match="needs an 'alphabet'"):
        load_lexicon(path)


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"regex": "a+", "text": "b"}], "only accepted in the server's lexicon file"),
        ([{"word": "x"}], "exactly one of 'phonemes' and 'text'"),
        ([{"word": "x", "phonemes": "a", "text": "b"}], "exactly one of"),
        ([{"word": "x", "text": "y", "color": "red"}], "unknown fields: color"),
        ([{"word": "", "text": "y"}], "needs a 'word'"),
        ([{"word": "x", "phonemes": "a(b)"}], "cannot contain"),
        ("not a list", "must be a list"),
        ([{"word": "x", "text": "y"}] * (MAX_REQUEST_ENTRIES + 1), f"at most {MAX_REQUEST_ENTRIES}"),
    ],
)
def test_bad_entries_are_refused_clearly(items: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_entries(items)


def test_unknown_phoneme_symbols_are_named() -> None:
    entries = parse_entries([{"word": "Xyzzo", "phonemes": "zˈɪz9Ω"}])
    with pytest.raises(InvalidInput) as info:
        for_voice(entries, "misaki", strict=True)
    assert "'Xyzzo'" in info.value.message and "'9'" in info.value.message and "U+03A9" in info.value.message
    with pytest.raises(InvalidInput, match="is in espeak; this voice uses misaki"):
        for_voice(parse_entries([{"word": "x", "phonemes": "a", "alphabet": "espeak"}]), "misaki", strict=True)


def test_a_replacement_the_voice_cannot_read_is_refused_not_dropped(frontend: Frontend) -> None:
    """A ``text`` replacement is read in the request's language: letters it lacks are refused by name, as
    in the input itself, never left out of the audio unspoken."""
    entries = parse_entries([{"word": "Xyzzo", "text": "你好"}])
    with pytest.raises(UnsupportedLanguage, match="Chinese"):
        frontend.phonemize_segment("Xyzzo runs.", "en-us", lexicon=entries)
