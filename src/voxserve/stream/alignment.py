"""Where each spoken word sits in the text the client sent, across normalization.

The frontend speaks normalized words ("$5" becomes "five dollars", "Dr." becomes "Doctor"). Word
timings carry ``char_start``/``char_end`` into the stream's text as it was sent, so a client can
highlight or cut at the original characters. Each text segment covers the next characters of the sent
text, as many as it has besides spaces (the segmenter keeps every other character); its spoken words are
matched to the tokens there by their letters and digits. Words that match a token exactly take that
token's span; a run of spoken words standing for a run of tokens that reads differently (a number, money,
a date, an abbreviation) takes the span of the token it came from: each token of the run is read alone
as the front end reads text (lexicon, then normalization), and when those readings spell the run's words
in order, each word points at its own token, so "five" and "dollars" point at "$5" and "six" at "$6" in
"$5 $6". Otherwise (a reading that depends on the tokens around it) every word of the run takes the
whole run's span.

Scripts written without spaces (Chinese, Japanese) are matched a character at a time, and a run of
words whose letters spell a run of characters exactly takes its own characters: "你好" and "世界" in
"你好，世界。" each point at their own two. Invisible separators (a zero-width space) part tokens as a
space does, and a ``[word](/phonemes/)`` span is matched by its word alone.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from voxserve.text.clean import is_word_break
from voxserve.text.markup import MARKUP_RE
from voxserve.text.scripts import script_of
from voxserve.types import WordTiming

Span = tuple[int, int]
_UNSPACED = frozenset({"Han", "Kana"})  # scripts written without spaces: one piece per character
_EDGE_PUNCT = "\"'“”‘’()[]{}<>,.;:!?¿¡…—–-*_"


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def spoken(word: str) -> bool:
    """Whether a word gets a timing (punctuation tokens do not)."""
    return any(ch.isalnum() for ch in word)


Reading = Callable[[str], str]  # a token as the front end reads it (Frontend.reading)


def match_words(
    words: Sequence[str], source: str, tokens: Sequence[Span], read: Reading | None = None
) -> list[Span | None]:
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
            parts = _spelled(word_keys[i1:i2], token_keys[j1:j2])
            if parts is None and read is not None and j2 - j1 > 1:
                parts = _read_apart(word_keys[i1:i2], [source[a:b] for a, b in tokens[j1:j2]], read)
            last = _trim(source, (tokens[j1][0], tokens[j2 - 1][1]))
            for k in range(i1, i2):
                if parts is not None:
                    a, b = parts[k - i1]
                    last = _trim(source, (tokens[j1 + a][0], tokens[j1 + b - 1][1]))
                result[k] = last
        elif tag == "delete":  # words with no token of their own (added by normalization): the one before
            for k in range(i1, i2):
                result[k] = last
    if result and result[0] is None and tokens:  # added before any token: the first one
        first = next((span for span in result if span is not None), _trim(source, tokens[0]))
        result = [span if span is not None else first for span in result]
    return result


def _spelled(words: Sequence[str], tokens: Sequence[str]) -> list[tuple[int, int]] | None:
    """For each of ``words`` (letters and digits), its run of ``tokens``, in order: the run that spells it
    exactly (tokens with no letters before it passed over), or, for a word read differently ("三个" for
    "3个"), the tokens up to where the next word is spelled. None unless every word and token is used."""

    def spell(word: str, j: int) -> tuple[int, int] | None:
        while j < len(tokens) and not tokens[j]:
            j += 1
        start, spelled = j, ""
        while j < len(tokens) and len(spelled) < len(word):
            spelled += tokens[j]
            j += 1
        return (start, j) if spelled == word else None

    runs: list[tuple[int, int]] = []
    j = 0
    for i, word in enumerate(words):
        run = spell(word, j)
        if run is None:
            after = words[i + 1] if i + 1 < len(words) else None
            ends = range(j + 1, len(tokens) + 1) if after is not None else [len(tokens)]
            end = next((k for k in ends if after is None or spell(after, k) is not None), None)
            if end is None or end <= j:
                return None
            run = (j, end)
        runs.append(run)
        j = run[1]
    return runs if not any(tokens[j:]) else None


def _read_apart(words: Sequence[str], tokens: Sequence[str], read: Reading) -> list[tuple[int, int]] | None:
    """For each of ``words`` (letters and digits), the run of ``tokens`` its letters come from when each
    token is read alone (``read``), or None unless those readings spell exactly the words in order."""
    readings = [_key(read(token)) for token in tokens]
    if "".join(readings) != "".join(words):
        return None
    ends = list(itertools.accumulate(len(reading) for reading in readings))  # where each token's letters end
    runs: list[tuple[int, int]] = []
    at = 0
    for word in words:
        first = bisect.bisect_right(ends, at)  # the token holding the word's first letter
        at += len(word)
        runs.append((first, bisect.bisect_left(ends, at) + 1))
    return runs


def _pieces(source: str, start: int, end: int) -> list[Span]:
    """The pieces of ``source[start:end]`` words are matched to: tokens between spaces or invisible word
    breaks (:func:`~voxserve.text.clean.is_word_break`), each Han or kana letter on its own, and the word
    of a ``[word](/phonemes/)`` span."""
    found: list[Span] = []
    at = start
    for markup in MARKUP_RE.finditer(source, start, end):
        found += _tokens(source, at, markup.start()) + _tokens(source, *markup.span(1))
        at = markup.end()
    return found + _tokens(source, at, end)


def _tokens(source: str, start: int, end: int) -> list[Span]:
    found: list[Span] = []
    run: int | None = None  # where the token being read began
    for i in range(start, end):
        alone = script_of(source[i]) in _UNSPACED
        if alone or source[i].isspace() or is_word_break(source, i):
            if run is not None:
                found.append((run, i))
                run = None
            if alone:
                found.append((i, i + 1))
        elif run is None:
            run = i
    return found if run is None else [*found, (run, end)]


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

    def __init__(self, read: Reading | None = None) -> None:
        self._read = read
        self._text = ""
        self._pos = 0
        self._spans: deque[tuple[str, Span | None]] = deque()

    def push(self, fragment: str) -> None:
        self._text += fragment

    def segment(self, segment_text: str, words: Sequence[str]) -> None:
        """A text segment is about to be spoken with these words (in order, punctuation included)."""
        text, count = self._text, sum(not ch.isspace() for ch in segment_text)
        start = self._pos
        while start < len(text) and text[start].isspace():
            start += 1
        end = start
        while end < len(text) and count:
            count -= not text[end].isspace()
            end += 1
        self._pos = end
        tokens = _pieces(text, start, end)
        timed = [w for w in words if spoken(w)]
        self._spans.extend(zip(timed, match_words(timed, self._text, tokens, self._read), strict=True))

    def timing(self, word: str, start_s: float, end_s: float) -> WordTiming:
        """The timing of the next spoken word ``word``, with its span (words the engine skipped are
        passed over; no span when it was not found)."""
        while self._spans:
            text, span = self._spans.popleft()
            if text == word:
                return WordTiming(word, start_s, end_s, *(span or (None, None)))
        return WordTiming(word, start_s, end_s)


class WordQueue:
    """A stream's word timings until the chunk they start in is sent, each in one chunk.

    Word times come from the model's phoneme durations, which count the silence it makes after a
    segment's last sound (long after a last word without final punctuation); the joiner trims that. So a
    segment's last word waits for the segment's end (:meth:`end_segment`) and ends no later than its
    audio: else it ended after the audio, after the whole stream's for the last word, and overlapped the
    next segment's first word. It is then sent with a later chunk than the one it starts in."""

    def __init__(self) -> None:
        self._ready: list[WordTiming] = []
        self._last: WordTiming | None = None  # the segment's last word, until its end is known

    def add(self, words: Iterable[WordTiming]) -> None:
        """A segment's words (or a further run's of the same segment)."""
        timed = list(words)
        if timed:
            self._ready += [self._last, *timed[:-1]] if self._last is not None else timed[:-1]
            self._last = timed[-1]

    def end_segment(self, end_s: float) -> None:
        """The segment's audio ends at ``end_s`` (stream seconds): no word of it ends later."""
        ready = self._ready + ([self._last] if self._last is not None else [])
        self._ready, self._last = within_audio(ready, end_s), None

    def take(self, end_s: float, everything: bool = False) -> tuple[WordTiming, ...]:
        """The words that start before ``end_s`` (all of them with ``everything``: the stream's last chunk)."""
        if everything and self._last is not None:
            self._ready.append(self._last)
            self._last = None
        taken = tuple(w for w in self._ready if everything or w.start_s < end_s)
        self._ready = [w for w in self._ready if not (everything or w.start_s < end_s)]
        return taken


def within_audio(words: Sequence[WordTiming], end_s: float) -> list[WordTiming]:
    """``words`` ending no later than ``end_s``: shortened where they end after it."""
    return [w if w.end_s <= end_s else replace(w, start_s=min(w.start_s, end_s), end_s=end_s) for w in words]
