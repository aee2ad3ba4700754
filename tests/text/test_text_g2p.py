"""Every language yields non-empty phonemes inside the target model's alphabet, word by word."""

from __future__ import annotations

import logging

import pytest

from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.text import Frontend
from voxserve.text.g2p_espeak import EspeakG2P, plain_numbers

SENTENCES = {
    "en-us": "Hello there! Dr. Smith paid $5.50 for 3.5 kg of quixotic xylophones, e.g. the 1st ones, at 3:30pm.",
    "en-gb": "The colour of the lorry was rather tomato-red, wasn't it?",
    "zh": "今天是2024年12月25日，天气很好，我们去公园散步吧！",
    "ja": "こんにちは、お元気ですか？東京は大きい都市です。",
    "fr": "Bonjour, je m'appelle Marie. Un bon vin blanc à 15 heures!",
    "es": "¡Hola! ¿Cómo estás? El perro corre rápido; 25 años.",
    "it": "Buongiorno, come stai? Gli gnocchi sono buonissimi.",
    "pt-br": "Olá, tudo bem? O coração não tem rugas.",
    "hi": "नमस्ते, आप कैसे हैं? मेरा नाम राहुल है।",
    "ko": "안녕하세요, 반갑습니다. 서울은 큰 도시입니다.",
}


@pytest.mark.parametrize("lang", list(SENTENCES))
def test_kokoro_phonemes_inside_vocab(frontend: Frontend, lang: str) -> None:
    segments = frontend.phonemize(SENTENCES[lang], lang, "misaki")
    assert segments
    for segment in segments:
        assert segment.lang == lang
        assert segment.phonemes.strip(" .,!?;:")
        outside = set(segment.phonemes) - set(KOKORO_VOCAB)
        assert not outside, (lang, outside, segment.phonemes)
        assert all(word.phonemes for word in segment.words)
        assert len(segment.phonemes) <= 510
    # some real letters, not just punctuation
    assert sum(ch.isalpha() for s in segments for ch in s.phonemes) > 10


def test_mixed_chinese_english_keeps_english_words(frontend: Frontend) -> None:
    segments = frontend.phonemize("我喜欢用 iPhone 和 Google Maps 打电话。", "zh")
    words = [w for s in segments for w in s.words]
    texts = [w.text for w in words]
    assert "iPhone" in texts and "Google" in texts and "Maps" in texts
    google = next(w for w in words if w.text == "Google")
    assert "ɡ" in google.phonemes and "↗" not in google.phonemes  # English phonemes, no tone arrows
    assert any("↓" in w.phonemes or "↘" in w.phonemes for w in words)  # Mandarin tones present
    phonemes = " ".join(s.phonemes for s in segments)
    assert not set(phonemes) - set(KOKORO_VOCAB)


def test_american_and_british_differ(frontend: Frontend) -> None:
    us = frontend.phonemize("tomato", "en-us")[0].phonemes
    gb = frontend.phonemize("tomato", "en-gb")[0].phonemes
    assert us != gb


def test_unknown_words_use_the_espeak_fallback(frontend: Frontend) -> None:
    segment = frontend.phonemize("Zzyzxqor blorptastic.", "en-us")[0]
    assert len(segment.words) >= 2
    assert all(w.phonemes and "❓" not in w.phonemes for w in segment.words)


def test_word_level_output_keeps_punctuation_tokens(frontend: Frontend) -> None:
    segment = frontend.phonemize("Well, hello world.", "en-us")[0]
    assert [w.text for w in segment.words] == ["Well", ",", "hello", "world", "."]
    assert segment.words[1].phonemes == ","
    assert segment.phonemes.startswith("wˈɛl, ")


@pytest.mark.parametrize("lang", ["en-us", "fr", "es"])
def test_piper_espeak_phonemes_inside_id_map(frontend: Frontend, piper_symbols: frozenset[str], lang: str) -> None:
    segments = frontend.phonemize(SENTENCES[lang] + " It's “quoted” — really…", lang, "espeak")
    for segment in segments:
        outside = set(segment.phonemes) - piper_symbols
        assert not outside, (outside, segment.phonemes)
        assert "ˈ" in segment.phonemes  # stress marks kept


def test_piper_english_is_per_word_with_punctuation(frontend: Frontend) -> None:
    segment = frontend.phonemize("Hello there, my friend!", "en-us", "espeak")[0]
    assert [w.text for w in segment.words] == ["Hello", "there", ",", "my", "friend", "!"]
    assert segment.phonemes == "həlˈoʊ ðˈɛɹ, maɪ fɹˈɛnd!"


def test_japanese_kanji_are_read_not_spelled(frontend: Frontend) -> None:
    phonemes = frontend.phonemize("東京は大きい都市です。", "ja")[0].phonemes
    assert phonemes.startswith("toːkʲoː βa")  # Kokoro's Japanese alphabet, particle は read わ


def test_plain_numbers_drops_thousands_separators_and_says_the_decimal_comma() -> None:
    assert (
        plain_numbers("Hay 1.000.000 de personas, 2.500,50 euros.", "es")
        == "Hay 1000000 de personas, 2500 coma 50 euros."
    )
    assert plain_numbers("Costa 2.500 euro", "it") == "Costa 2500 euro"
    assert plain_numbers("São 1.000.000 de pessoas e 3,5 kg", "pt-br") == "São 1000000 de pessoas e 3 vírgula 5 kg"
    for space in (" ", "\u00a0", "\u202f"):
        assert plain_numbers(f"Il coûte 1{space}234{space}567,5 euros.", "fr") == "Il coûte 1234567 virgule 5 euros."
    # Dates, versions and IP addresses are not grouped numbers; other languages are left alone.
    assert plain_numbers("El 1.2.2024 y 192.168.1.1 o 12.30", "es") == "El 1.2.2024 y 192.168.1.1 o 12.30"
    assert plain_numbers("Uno, dos y 1,000,000", "es") == "Uno, dos y 1000000"
    assert plain_numbers("It costs 1.000 or 3,5", "en-us") == "It costs 1.000 or 3,5"
    assert plain_numbers("Il y a 12 ans et 3 chats", "fr") == "Il y a 12 ans et 3 chats"


@pytest.mark.parametrize(
    ("lang", "text", "number", "expected", "wrong"),
    [
        ("es", "Hay 1.000.000 de personas.", "1000000", "miʝˈon", "θˈeɾo"),  # not "uno . cero cero cero"
        ("it", "Costa 2.500 euro.", "2500", "mˈiːla", "."),  # not "due . cinquecento"
        ("pt-br", "Custa 2.500 reais.", "2500", "mˈiʊ", "."),
        ("fr", "Il coûte 1 234 euros.", "1234", "mil", "œ̃"),  # not "un" + "deux cent trente-quatre"
        ("fr", "Il coûte 1\u202f234 euros.", "1234", "mil", "œ̃"),
        ("fr", "Il coûte 1\u00a0234 euros.", "1234", "mil", "œ̃"),
    ],
)
def test_grouped_numbers_are_read_as_one_number(
    frontend: Frontend, lang: str, text: str, number: str, expected: str, wrong: str
) -> None:
    words = [w for s in frontend.phonemize(text, lang, "espeak") for w in s.words]
    word = next(w for w in words if w.text == number)
    assert expected in word.phonemes and wrong not in word.phonemes, word


def test_decimal_comma_is_read_as_the_language_says_it() -> None:
    words = EspeakG2P("es", "espeak")("Pesa 3,5 kilos.")
    assert [w.text for w in words][:4] == ["Pesa", "3", "coma", "5"]
    assert "," not in "".join(w.phonemes for w in words)  # no pause between "tres" and "cinco"


def test_numbers_read_as_several_words_keep_the_sentence_context(caplog: pytest.LogCaptureFixture) -> None:
    g2p = EspeakG2P("fr", "espeak")
    with caplog.at_level(logging.DEBUG, logger="voxserve.text.g2p_espeak"):
        phonemes = g2p.word_phonemes(["Il", "coûte", "1234", "euros"])
    assert len(phonemes) == 4 and phonemes[2].split() == ["mil", "døsɑ̃", "tʁɑ̃tkˈatʁ"]
    # "Il" as read inside the sentence (unstressed), not alone ("ˈil"): the context was kept.
    assert phonemes[0] == g2p.word_phonemes(["Il", "coûte", "cher"])[0] != g2p.word_phonemes(["Il"])[0]
    assert not any("word by word" in r.getMessage() for r in caplog.records)


def test_phonemizer_warnings_do_not_reach_the_user(caplog: pytest.LogCaptureFixture) -> None:
    g2p = EspeakG2P("fr", "espeak")
    with caplog.at_level(logging.INFO):
        g2p("Il coûte 1234 euros.")  # espeak reads 1234 as three words: a "words count mismatch"
        EspeakG2P("ja", "espeak")("こんにちは")
    assert not [r for r in caplog.records if r.levelno >= logging.INFO and "phonemizer" in r.name], caplog.records
    assert not any("mismatch" in r.getMessage() and r.levelno >= logging.INFO for r in caplog.records)
