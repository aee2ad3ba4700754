"""Every language yields non-empty phonemes inside the target model's alphabet, word by word."""

from __future__ import annotations

import pytest

from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.text import Frontend

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
    assert "ʧ" not in phonemes or "lˈe" not in phonemes  # espeak's "Chinese letter" reading
    assert phonemes.startswith("tˌoɯᵝkʲˈoɯᵝ")
