"""Property-based fuzzing of the text path (clean → segment → normalize → G2P) for every language.

Properties, for any input:
- the only error is an ``InvalidInput`` (a 400 / an ``error`` event), never anything else;
- the work is bounded linearly: the G2P sees at most a fixed multiple of the input's characters, and
  no single G2P call more than a fixed number, whatever the text (counted, not timed);
- every phoneme emitted is in the voice's vocabulary (Kokoro's, or Piper's espeak symbols).

The examples found by fuzzing are kept as ``@example`` regression cases. ``VOXSERVE_FUZZ=long``
(tests/conftest.py) runs many more, freshly drawn examples.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from hypothesis import example, given
from hypothesis import strategies as st

from voxserve.engines.base import Alphabet
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.errors import InvalidInput
from voxserve.text import Frontend
from voxserve.text.frontend import _Locked
from voxserve.text.languages import SUPPORTED_LANGS
from voxserve.text.normalize_en import normalize_english
from voxserve.text.segment import IncrementalSegmenter, split_text

# What the G2P may see per input character (normalization spells "¾" as "three quarters": 14), and per call
# (a segment is at most max_segment_chars long before normalization).
EXPANSION = 16
PER_CALL = EXPANSION * 400 + 64

BIDI = "\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
CONTROLS = "".join(map(chr, range(0x20))) + "\x7f" + "".join(map(chr, range(0x80, 0xA0)))
PUNCTUATION = string.punctuation + "…—–«»¡¿“”‘’·•§¶†‡‰′″‹›、。，！？：；「」『』（）"
SCRIPTS = "abcXYZ éñüß Привет Γειά مرحبا שלום नमस्ते 你好世界 こんにちは カタカナ 한국어 ๑๒ ½¾⅞ ²³ ①"

pieces = st.one_of(
    st.text(max_size=30),  # any Unicode, lone surrogates included (JSON "\\ud800" escapes make them)
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, categories=["Cs"]), max_size=3),
    st.integers(min_value=-(10**130), max_value=10**130).map(str),  # huge numbers
    st.from_regex(r"-?\d{1,40}([.,]\d{1,40}){0,6}", fullmatch=True),  # malformed numbers
    st.from_regex(r"[$€£¥₹]\d{1,20}(\.\d{1,4})?[kKmMbB]?n?", fullmatch=True),  # money
    st.from_regex(r"\d{1,4}[/.-]\d{1,4}[/.-]\d{1,6}", fullmatch=True),  # dates
    st.from_regex(r"\d{1,3}:\d{1,3}(:\d{1,3})?\s?([aApP]\.?[mM]\.?)?", fullmatch=True),  # times
    st.from_regex(r"\d{1,6}(st|nd|rd|th|s|%|km|kg|°C|mph)", fullmatch=True),
    st.text(st.sampled_from(PUNCTUATION), min_size=1, max_size=300),  # punctuation runs
    st.text(st.sampled_from(BIDI + ZERO_WIDTH + CONTROLS), min_size=1, max_size=20),
    st.text(st.sampled_from(SCRIPTS + BIDI), max_size=40),
    st.sampled_from(["<speak>", "</p>", "[x](/ab/)", "[word](/həˈloʊ/)", "[](//)", "](/", "&amp;", "{{x}}", "<<<"]),
    st.sampled_from(["http://a.b/c?d=e", "www.x.com", "a@b.co", "+1 555 123 4567", "Dr.", "e.g.", "No.", "#5"]),
)
texts = st.lists(pieces, max_size=12).map(" ".join) | st.lists(pieces, max_size=12).map("".join)
# a single "word" up to 100 kB: one unit repeated (drawing each character would be slow)
huge_words = st.builds(
    lambda unit, n: unit * n,
    st.sampled_from(["a", "ab1", "a-", "1,", "é", "!", "你", "\u200b"]),
    st.integers(1, 100_000),
)


class Counting:
    """Counts the characters every G2P call is given."""

    def __init__(self) -> None:
        self.total = 0
        self.largest = 0


@contextmanager
def counting_g2p() -> Iterator[Counting]:
    counter = Counting()
    original = _Locked.__call__

    def count(self: _Locked, text: str) -> object:
        counter.total += len(text)
        counter.largest = max(counter.largest, len(text))
        return original(self, text)

    with mock.patch.object(_Locked, "__call__", count):
        yield counter


def check(frontend: Frontend, text: str, lang: str, alphabet: Alphabet = "misaki") -> None:
    vocabulary = set(KOKORO_VOCAB) if alphabet == "misaki" else None
    with counting_g2p() as work:
        try:
            segments = frontend.phonemize(text, lang, alphabet)
        except InvalidInput:
            segments = []
    assert work.total <= EXPANSION * len(text) + 64, (work.total, len(text))
    assert work.largest <= PER_CALL
    for segment in segments:
        assert segment.phonemes
        if vocabulary is not None:
            assert not set(segment.phonemes) - vocabulary, (text, segment.phonemes)


@given(text=texts, lang=st.sampled_from(SUPPORTED_LANGS))
@example(text="1" * 307, lang="en-us")  # num2words overflowed: OverflowError, an HTTP 500
@example(text="Fine. " + "9" * 400, lang="en-us")
@example(text="1" + ",000" * 2000, lang="en-us")  # int() of 6,001 digits raised ValueError
@example(text="ab1" * 100, lang="en-us")  # misaki's subtoken search: 13 s for 300 characters
@example(text="!?" * 2000, lang="en-us")
@example(text="\u202eabc\u202c \u200b\u200b 12\u2066 34 \ud800", lang="en-us")
def test_any_text_in_any_language(frontend: Frontend, text: str, lang: str) -> None:
    check(frontend, text, lang)


@given(text=texts)
@example(text="[x](/ab/) [word](/həˈloʊ/) 3.5 $5")
def test_any_text_in_espeak_phonemes(frontend: Frontend, text: str, piper_symbols: frozenset[str]) -> None:
    with counting_g2p() as work:
        try:
            segments = frontend.phonemize(text, "en-us", "espeak")
        except InvalidInput:
            segments = []
    assert work.total <= EXPANSION * len(text) + 64
    for segment in segments:
        assert not set(segment.phonemes) - piper_symbols, (text, segment.phonemes)


@given(text=texts | huge_words)
@example(text="a" * 100_000)
@example(text="1" * 100_000)
@example(text="." * 100_000)
def test_normalization_and_segmentation_of_anything(text: str) -> None:
    """Cheap stages over inputs up to 100 kB: only InvalidInput, output bounded by the input, and the
    streaming segmenter agrees with the whole-text one."""
    segments = split_text(text, 6, 400)
    assert all(len(s.text) <= 400 for s in segments)
    streaming = IncrementalSegmenter(6, 400)
    pieces_ = [text[i : i + 7] for i in range(0, len(text), 7)]
    streamed = [s for piece in pieces_ for s in streaming.push(piece)] + streaming.flush()
    assert streamed == segments
    for segment in segments:
        try:
            spoken = normalize_english(segment.text)
        except InvalidInput:
            continue
        assert len(spoken) <= EXPANSION * len(segment.text) + 64


@given(word=huge_words.filter(lambda w: len(w) <= 4000), lang=st.sampled_from(["en-us", "fr", "zh", "ja"]))
def test_long_single_words_cost_linear_work(frontend: Frontend, word: str, lang: str) -> None:
    check(frontend, word, lang)
