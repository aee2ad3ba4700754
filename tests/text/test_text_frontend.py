from __future__ import annotations

import random
import threading
from typing import cast

import pytest

from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.errors import InputTooLarge, InvalidInput, UnsupportedLanguage, VoxError
from voxserve.settings import Settings
from voxserve.text import Alphabet, Frontend, TextSegment
from voxserve.text.clean import clean_text
from voxserve.text.segment import IncrementalSegmenter


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "\x00\x01\x02", "\u200b"])
def test_empty_input(frontend: Frontend, text: str) -> None:
    with pytest.raises(InvalidInput, match="input text is empty"):
        frontend.phonemize(text, "en-us")


@pytest.mark.parametrize("text", ["😀😀 🎉", "...!!!", "🙂 — 🙃"])
def test_nothing_speakable(frontend: Frontend, text: str) -> None:
    with pytest.raises(InvalidInput, match="nothing speakable"):
        frontend.phonemize(text, "en-us")


def test_unsupported_language_lists_supported(frontend: Frontend) -> None:
    # Swahili: no voice in the suite brings it (a Piper voice's config registers its language process-wide)
    with pytest.raises(UnsupportedLanguage, match=r"supported: .*pt-br"):
        frontend.phonemize("Habari dunia", "sw")


def test_unknown_alphabet(frontend: Frontend) -> None:
    with pytest.raises(InvalidInput, match="alphabet"):
        frontend.phonemize("hello", "en-us", cast(Alphabet, "arpabet"))


def test_input_too_large(text_settings: Settings) -> None:
    small = Frontend(text_settings.model_copy(update={"max_input_chars": 10}))
    with pytest.raises(InputTooLarge):
        small.phonemize("This is longer than ten characters.", "en-us")


def test_control_characters_and_emoji_stripped(frontend: Frontend) -> None:
    segments = frontend.phonemize("Hello\x07 wor\u00adld 😀!", "en-us")  # a soft hyphen sits inside a word
    assert segments[0].phonemes == "həlˈO wˈɜɹld!"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("zero\u200dwidth", "zero width"),  # zero-width joiner between Latin letters
        ("zero\u200bwidth", "zero width"),  # zero-width space
        ("zero\x00width", "zero width"),  # NUL
        ("zero\u2063width", "zero width"),  # invisible separator
        ("zero\u2060width", "zerowidth"),  # word joiner: no break
        ("क्\u200dष", "क्ष"),  # a joiner shaping Devanagari stays inside the word
    ],
)
def test_invisible_separators_break_words(text: str, expected: str) -> None:
    assert clean_text(text) == expected


def test_mixed_scripts_are_read_or_refused_by_name(frontend: Frontend) -> None:
    for text in ["Ça va? Grüße aus Köln!", "The angle Σ is small"]:  # Latin letters; a lone Greek symbol
        segments = frontend.phonemize(text, "en-us")
        assert segments
        assert not set(" ".join(s.phonemes for s in segments)) - set(KOKORO_VOCAB)
    for text, name in [("Привет, how are you?", "Russian"), ("Hello 東京 and world", "Chinese")]:
        with pytest.raises(UnsupportedLanguage, match=name):  # never spelled out letter by letter
            frontend.phonemize(text, "en-us")


def test_segments_carry_boundaries(frontend: Frontend) -> None:
    segments = frontend.phonemize("Sure, I can help with that. It will take a minute, or two, maybe more", "en-us")
    assert segments[0].boundary == "sentence"
    assert segments[-1].boundary == "none"


def test_long_sentence_resplit_under_max_phonemes(frontend: Frontend) -> None:
    text = " ".join(["This is a fairly long clause with many words in it, and it keeps going"] * 10) + "."
    segments = frontend.phonemize(text, "en-us", max_phonemes=100)
    assert len(segments) > 3
    assert all(0 < len(s.phonemes) <= 100 for s in segments)
    assert segments[-1].boundary == "sentence"
    assert any(s.boundary == "clause" for s in segments)


def test_kokoro_limit_holds_for_a_huge_sentence(frontend: Frontend) -> None:
    text = "word " * 600
    segments = frontend.phonemize(text, "en-us")
    assert all(len(s.phonemes) <= 510 for s in segments)


def test_phonemize_segment_from_the_incremental_segmenter(frontend: Frontend) -> None:
    segmenter = IncrementalSegmenter(frontend.first_segment_words, frontend.max_segment_chars)
    segments = segmenter.push("Sure, I can help with that. Let me check") + segmenter.flush()
    assert segments[0] == TextSegment("Sure, I can help with that.", "sentence")
    phonemized = [p for s in segments for p in frontend.phonemize_segment(s, "en-us")]
    assert [p.boundary for p in phonemized] == ["sentence", "none"]
    assert frontend.phonemize_segment("🙂", "en-us") == []


def test_concurrent_calls_are_safe(frontend: Frontend) -> None:
    expected = {lang: frontend.phonemize(text, lang)[0].phonemes for lang, text in _THREAD_TEXTS.items()}
    errors: list[BaseException] = []

    def work(lang: str, text: str) -> None:
        try:
            for _ in range(10):
                assert frontend.phonemize(text, lang)[0].phonemes == expected[lang]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=item) for item in list(_THREAD_TEXTS.items()) * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


_THREAD_TEXTS = {
    "en-us": "The quick brown fox jumps.",
    "en-gb": "The lorry is red.",
    "zh": "你好，世界。",
    "fr": "Bonjour.",
}


def test_lazy_construction(text_settings: Settings) -> None:
    fresh = Frontend(text_settings)
    assert not fresh._g2ps
    fresh.phonemize("Bonjour.", "fr")
    assert list(fresh._g2ps) == [("fr", "misaki")]


def test_random_input_never_crashes(frontend: Frontend, piper_symbols: frozenset[str]) -> None:
    """Random mixtures of scripts, symbols, numbers and markup: only VoxErrors, always in-alphabet output."""
    rng = random.Random(7)
    alphabet = [
        *"abc xyz ABC 0123456789 .,;:!?-—'\"()[]/$€%&@+=#*_~<>\n\t",
        "你", "好", "。", "，", "こ", "ん", "東", "é", "ñ", "П", "р", "Σ", "😀", "\u200b", "\x00", "न", "한",
        "[x](/ab/)", "3.5", "1,000", "$5", "12/25/2024", "3:30pm", "http://a.b/c", "e.g.", "Dr.",
    ]  # fmt: skip
    langs = ["en-us", "en-gb", "zh", "ja", "fr", "hi"]
    for _ in range(150):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50)))
        lang = rng.choice(langs)
        kind: Alphabet = "espeak" if lang == "en-us" and rng.random() < 0.3 else "misaki"
        limit = rng.choice([30, 510])
        symbols = piper_symbols if kind == "espeak" else frozenset(KOKORO_VOCAB)
        try:
            segments = frontend.phonemize(text, lang, kind, max_phonemes=limit)
        except VoxError:
            continue
        for segment in segments:
            assert segment.phonemes and len(segment.phonemes) <= limit
            assert not set(segment.phonemes) - symbols, (text, segment.phonemes)
