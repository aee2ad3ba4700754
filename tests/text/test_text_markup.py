from __future__ import annotations

import pytest

from voxserve.errors import InvalidInput
from voxserve.text import Frontend
from voxserve.text.markup import Span, check_phonemes, parse_markup, strip_markup


def test_parse_markup_spans() -> None:
    spans = parse_markup("The [Kokoro](/kˈOkəɹO/) model")
    assert spans == [Span("The "), Span("Kokoro", "kˈOkəɹO"), Span(" model")]
    assert strip_markup("The [Kokoro](/kˈOkəɹO/) model") == "The Kokoro model"
    assert parse_markup("no [markup] (here)") == [Span("no [markup] (here)")]


def test_markup_phonemes_are_used_verbatim(frontend: Frontend) -> None:
    segment = frontend.phonemize("The [Kokoro](/kˈOkəɹO/) model.", "en-us")[0]
    assert segment.text == "The Kokoro model."
    word = next(w for w in segment.words if w.text == "Kokoro")
    assert word.phonemes == "kˈOkəɹO"
    assert segment.phonemes == "ðə kˈOkəɹO mˈɑdᵊl."


def test_markup_works_for_espeak_languages(frontend: Frontend) -> None:
    segment = frontend.phonemize("Je suis [Kokoro](/kokoʁo/) ici.", "fr")[0]
    assert "kokoʁo" in segment.phonemes.split()


def test_markup_with_unknown_symbols_is_rejected(frontend: Frontend) -> None:
    with pytest.raises(InvalidInput, match="U\\+01C3"):
        frontend.phonemize("Say [this](/ǃis/) now.", "en-us")


@pytest.mark.parametrize("text", ["Say [tomato](/təm☃ɑːtoʊ/) now.", "Say [tomato](/☃/) now."])
def test_a_symbol_that_cleaning_would_drop_from_markup_is_refused_by_name(frontend: Frontend, text: str) -> None:
    """Emoji and symbols are dropped from text as it is cleaned; inside a span's phonemes that would speak
    the rest of them, or leave the word unspoken. The caller hears which symbol is wrong instead."""
    with pytest.raises(InvalidInput, match="U\\+2603"):
        frontend.phonemize_segment(text, "en-us")


def test_markup_with_no_phonemes_is_refused(frontend: Frontend) -> None:
    with pytest.raises(InvalidInput, match="no phonemes"):
        frontend.phonemize("Say [tomato](/ /) now.", "en-us")


def test_check_phonemes_decomposes_precomposed_letters() -> None:
    assert check_phonemes("bõ", "misaki") == "bo\u0303"
    with pytest.raises(InvalidInput, match="'ʘ'"):
        check_phonemes("aʘb", "misaki")


def test_whole_phoneme_input(frontend: Frontend) -> None:
    segments = frontend.phonemize_phonemes("həlˈO wˈɜɹld! hˌW ɑɹ ju?", "en-us", "misaki")
    assert [s.phonemes for s in segments] == ["həlˈO wˈɜɹld!", "hˌW ɑɹ ju?"]
    assert all(s.boundary == "sentence" for s in segments)


def test_whole_phoneme_input_validated_per_alphabet(frontend: Frontend) -> None:
    with pytest.raises(InvalidInput, match="'O'"):
        frontend.phonemize_phonemes("həlˈO", "en-us", "espeak")
    assert frontend.phonemize_phonemes("həlˈoʊ", "en-us", "espeak")[0].phonemes == "həlˈoʊ"
    with pytest.raises(InvalidInput, match="empty"):
        frontend.phonemize_phonemes("  \x00 ", "en-us")


def test_whole_phoneme_input_split_under_limit(frontend: Frontend) -> None:
    long = " ".join(["həlˈO,"] * 100)
    segments = frontend.phonemize_phonemes(long, "en-us", max_phonemes=50)
    assert len(segments) > 1
    assert all(len(s.phonemes) <= 50 for s in segments)
