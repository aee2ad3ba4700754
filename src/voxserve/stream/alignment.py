"""Where each spoken word sits in the text the client sent, across normalization.

The frontend speaks normalized words ("$5" becomes "five dollars", "Dr." becomes "Doctor"). Word
timings carry ``char_start``/``char_end`` into the stream's text as it was sent, so a client can
highlight or cut at the original characters. Each text segment covers the next whitespace-separated
tokens of the sent text (the segmenter splits between tokens); its spoken words are matched to those
tokens by their letters and digits. Words that match a token exactly take that token's span; a run of
spoken words standing for a run of tokens that reads differently (a number, money, a date, an
abbreviation) takes the span of the whole run, so "five" and "dollars" both point at "$5".
"""

from __future__ import annotations

import difflib
import re
from collections import deque
from collections.abc import Sequence

from voxserve.types import WordTiming

Span = tuple[int, int]
_TOKEN = re.compile(r"\S+")
_EDGE_PUNCT = "\"'“”‘’()[]{}<>,.;:!?¿¡…—–-*_"


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def spoken(word: str) -> bool:
    """Whether a word gets a timing (punctuation tokens do not)."""
    return any(ch.isalnum() for ch in word)


def match_words(words: Sequence[str], source: str, tokens: Sequence[Span]) -> list[Span | None]:
    """The span in ``source`` of each of ``words``, matched against ``tokens`` (spans of ``source``)."""
    word_keys = [_key(w) for w in words]
    token_keys = [_key(source[a:b]) for a, b in tokens]
    result: list[Span | None] = [None] * len(words)
    matcher = difflib.SequenceMatcher(a=word_keys, b=token_keys, autojunk=False)
    last: Span | None = None
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                result[i1 + k] = last = _trim(source, tokens[j1 + k])
        elif tag == "replace":
            last = _trim(source, (tokens[j1][0], tokens[j2 - 1][1]))
            for k in range(i1, i2):
                result[k] = last
        elif tag == "delete":  # words with no token of their own (added by normalization): the one before
            for k in range(i1, i2):
                result[k] = last
    if result and result[0] is None and tokens:  # added before any token: the first one
        first = next((span for span in result if span is not None), _trim(source, tokens[0]))
        result = [span if span is not None else first for span in result]
    return result


def _trim(source: str, span: Span) -> Span:
    """The span without the punctuation around the word ("(today)," → "today"), unless that leaves nothing."""
    start, end = span
    while start < end and source[start] in _EDGE_PUNCT:
        start += 1
    while end > start and source[end - 1] in _EDGE_PUNCT:
        end -= 1
    return (start, end) if start < end else span


class SourceAligner:
    """One stream's sent text and its spoken words' spans, consumed in speaking order."""

    def __init__(self) -> None:
        self._text = ""
        self._pos = 0
        self._spans: deque[tuple[str, Span | None]] = deque()

    def push(self, fragment: str) -> None:
        self._text += fragment

    def segment(self, segment_text: str, words: Sequence[str]) -> None:
        """A text segment is about to be spoken with these words (in order, punctuation included)."""
        count = len(segment_text.split())
        tokens: list[Span] = []
        for found in _TOKEN.finditer(self._text, self._pos):
            if len(tokens) == count:
                break
            tokens.append(found.span())
        if tokens:
            self._pos = tokens[-1][1]
        timed = [w for w in words if spoken(w)]
        self._spans.extend(zip(timed, match_words(timed, self._text, tokens), strict=True))

    def timing(self, word: str, start_s: float, end_s: float) -> WordTiming:
        """The timing of the next spoken word ``word``, with its span (words the engine skipped are
        passed over; no span when it was not found)."""
        while self._spans:
            text, span = self._spans.popleft()
            if text == word:
                return WordTiming(word, start_s, end_s, *(span or (None, None)))
        return WordTiming(word, start_s, end_s)
