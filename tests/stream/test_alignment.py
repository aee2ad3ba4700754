"""Word spans in the sent text across normalization (voxserve.stream.alignment), on the real frontend."""

from __future__ import annotations

import pytest

from voxserve.engines.base import Alphabet
from voxserve.settings import Settings
from voxserve.stream.alignment import SourceAligner, match_words, spoken
from voxserve.text.frontend import Frontend
from voxserve.text.segment import IncrementalSegmenter
from voxserve.types import LexiconEntry


def test_matched_runs_and_added_words() -> None:
    source = "It costs $5, (today)."
    tokens = [(0, 2), (3, 8), (9, 12), (13, 21)]
    spans = match_words(["It", "costs", "five", "dollars", "today"], source, tokens)
    assert [source[span[0] : span[1]] for span in spans if span] == ["It", "costs", "$5", "$5", "today"]
    # a word normalization added with no token of its own takes the token before it
    assert match_words(["costs", "extra", "today"], source, tokens[1:2] + tokens[3:]) == [(3, 8), (3, 8), (14, 19)]


@pytest.fixture(scope="module")
def frontend() -> Frontend:
    return Frontend(Settings(_env_file=None))


CASES = [
    ("It costs $5 on Jan 5, 2024, said Dr. Smith.", {"five": "$5", "dollars": "$5", "Doctor": "Dr", "Smith": "Smith"}),
    ("The U.S. GDP grew 3.5% in Q2.", {"three": "3.5%", "percent": "3.5%", "grew": "grew", "in": "in"}),
    ("Call 555-1234 at 3:30 pm, not 42 times.", {"thirty": "3:30", "forty": "42", "times": "times"}),
]


@pytest.mark.parametrize("alphabet", ["misaki", "espeak"])
@pytest.mark.parametrize(("text", "expected"), CASES)
def test_numbers_money_dates_abbreviations(
    frontend: Frontend, alphabet: Alphabet, text: str, expected: dict[str, str]
) -> None:
    """Streamed in fragments that split tokens, as a client would send them."""
    aligner, segmenter = SourceAligner(), IncrementalSegmenter(4, 400)
    segments = []
    for start in range(0, len(text), 7):
        fragment = text[start : start + 7]
        aligner.push(fragment)
        segments += segmenter.push(fragment)
    segments += segmenter.flush()
    read: dict[str, str] = {}
    for segment in segments:
        words = [w.text for s in frontend.phonemize_segment(segment, "en-us", alphabet) for w in s.words]
        aligner.segment(segment.text, words)
        for word in filter(spoken, words):
            timing = aligner.timing(word, 0.0, 0.0)
            assert timing.char_start is not None and timing.char_end is not None, word
            read.setdefault(word, text[timing.char_start : timing.char_end])
    for word, original in expected.items():
        assert read[word] == original, (word, read)


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("你好，世界。今天天气很好。", "zh", {"你好": "你好", "世界": "世界", "今天天气": "今天天气", "很": "很"}),
        ("我有3个苹果。", "zh", {"有": "有", "三个": "3个", "苹果": "苹果"}),
        (
            "こんにちは、世界。今日はいい天気ですね。",
            "ja",
            {"こんにちは": "こんにちは", "世界": "世界", "天気": "天気"},
        ),
        ("Hello\u200bworld test.", "en-us", {"Hello": "Hello", "world": "world", "test": "test"}),
        ("[Kokoro](/kˈOkəɹO/) speaks.", "en-us", {"Kokoro": "Kokoro", "speaks": "speaks"}),
    ],
)
def test_unspaced_scripts_separators_and_phoneme_spans_point_at_their_own_characters(
    frontend: Frontend, text: str, lang: str, expected: dict[str, str]
) -> None:
    """Chinese and Japanese have no spaces between words, a zero-width space parts words without one, and
    a phoneme span's characters are its word's: each spoken word still points at its own characters,
    streamed in fragments of three characters."""
    aligner, segmenter = SourceAligner(), IncrementalSegmenter(4, 400)
    segments = []
    for start in range(0, len(text), 3):
        aligner.push(text[start : start + 3])
        segments += segmenter.push(text[start : start + 3])
    segments += segmenter.flush()
    read: dict[str, str] = {}
    for segment in segments:
        words = [w.text for s in frontend.phonemize_segment(segment, lang) for w in s.words]
        aligner.segment(segment.text, words)
        for word in filter(spoken, words):
            timing = aligner.timing(word, 0.0, 0.0)
            assert timing.char_start is not None and timing.char_end is not None, word
            read.setdefault(word, text[timing.char_start : timing.char_end])
    assert {word: read.get(word) for word in expected} == expected, read


@pytest.mark.parametrize(
    ("text", "lexicon", "expected"),
    [
        ("Pay $5 $6 now.", (), [("five", "$5"), ("dollars", "$5"), ("six", "$6"), ("dollars", "$6")]),
        (
            "It runs abc xyz now.",
            (LexiconEntry("abc", text="alpha"), LexiconEntry("xyz", text="zulu")),
            [("alpha", "abc"), ("zulu", "xyz"), ("now", "now")],
        ),
        (
            "Run k8s v2.3 today.",
            (
                LexiconEntry("k8s", text="kubernetes"),
                LexiconEntry(r"\bv(\d+)\.(\d+)\b", text=r"version \1 point \2", regex=True),
            ),
            [("kubernetes", "k8s"), ("version", "v2.3"), ("two", "v2.3"), ("point", "v2.3"), ("three", "v2.3")],
        ),
    ],
)
def test_neighbouring_changed_tokens_each_keep_their_own_span(
    frontend: Frontend, text: str, lexicon: tuple[LexiconEntry, ...], expected: list[tuple[str, str]]
) -> None:
    """Two tokens next to each other that both read differently (normalized, or replaced by the lexicon)
    are one run to the matcher; read alone, each token tells which spoken words are its own."""
    aligner = SourceAligner(lambda token: frontend.reading(token, "en-us", lexicon))
    aligner.push(text)
    words = [w.text for s in frontend.phonemize_segment(text, "en-us", lexicon=lexicon) for w in s.words]
    aligner.segment(text, words)
    read = []
    for word in filter(spoken, words):
        timing = aligner.timing(word, 0.0, 0.0)
        assert timing.char_start is not None and timing.char_end is not None, word
        read.append((word, text[timing.char_start : timing.char_end]))
    assert [pair for pair in read if pair[0] in {w for w, _ in expected}] == expected, read
    # without reading them apart, the run's words share its whole span, as before
    alone = SourceAligner()
    alone.push(text)
    alone.segment(text, words)
    spans = {text[t.char_start : t.char_end] for w in filter(spoken, words) if (t := alone.timing(w, 0, 0)).char_start}
    assert any(" " in span for span in spans), spans
