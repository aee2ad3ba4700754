"""Sentence and clause segmentation, for whole texts and for text that arrives in fragments.

Every decision depends only on the characters already received plus one character of
lookahead, so feeding a text token by token gives the same segments as feeding it at once
(:func:`split_text` is exactly ``push(text) + flush()``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from voxserve.text.markup import MARKUP_RE
from voxserve.types import Boundary

_SENT_ASCII = ".!?…।"
_SENT_CJK = "。！？．"
_CLAUSE_ASCII = ",;:"
_CLAUSE_ANY = "，、；：—"  # a boundary whatever follows (CJK text has no spaces; dashes often touch words)
_CLOSERS = "\"'”’)]}」』》】）"
# Words whose trailing period never ends a sentence.
_ALWAYS_ABBREV = {
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "e.g", "i.e", "approx", "dept", "est", "fig", "vol",
    "gen", "capt", "sgt", "rev", "ave", "blvd", "mt", "cf", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
}  # fmt: skip
# Words whose period ends a sentence only when an upper-case letter follows.
_MAYBE_ABBREV = {"etc", "inc", "ltd", "co", "no", "corp"}
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_MARKUP_RE = MARKUP_RE
_MARKUP_MAX = 420

EventKind = Literal["sentence", "clause", "word"]


@dataclass(frozen=True)
class TextSegment:
    """A piece of text to phonemize; ``boundary`` says what ends it."""

    text: str
    boundary: Boundary


@dataclass(frozen=True)
class _Event:
    pos: int  # cut here: the segment is buf[:pos]
    kind: EventKind


def _is_cjk(ch: str) -> bool:
    return bool(_CJK_CHAR.match(ch))


def _word_parts(text: str) -> tuple[int, int]:
    """(non-CJK words, CJK characters) of ``text``."""
    latin = cjk = 0
    for token in text.split():
        cjk += len(_CJK_CHAR.findall(token))
        latin += 1 if any(c.isalnum() and not _is_cjk(c) for c in token) else 0
    return latin, cjk


def count_words(text: str) -> int:
    """Whitespace-separated words; two Chinese/Japanese characters count as one word."""
    latin, cjk = _word_parts(text)
    return latin + (cjk + 1) // 2


def _markup_end(buf: str, start: int, final: bool) -> int | None:
    """End of an inline-phoneme span starting at ``start``; ``-1`` if it may still be one; None if not one."""
    match = _MARKUP_RE.match(buf, start)
    if match:
        return match.end()
    tail = buf[start : start + _MARKUP_MAX]
    if final or len(tail) >= _MARKUP_MAX or "\n" in tail:
        return None
    # Could the buffer still grow into a span? Check the prefix against the grammar.
    if re.fullmatch(r"\[[^\[\]\n]{0,100}(\](\((/[^()\n]{0,300}(/)?)?)?)?", tail):
        return -1
    return None


def _period_ends_sentence(buf: str, dot: int, after: int) -> bool | None:
    """Whether the single '.' at ``dot`` ends a sentence; None when more text is needed to tell."""
    start = dot
    while start > 0 and not buf[start - 1].isspace():
        start -= 1
    word = buf[start:dot].lstrip("\"'“‘([{").lower()
    if word in _ALWAYS_ABBREV:
        return False
    if len(word) == 1 and word.isalpha() and buf[dot - 1].isupper():
        return False  # an initial: "J. K. Rowling"
    if re.fullmatch(r"(?:[a-z]\.)+[a-z]", word):
        return False  # "U.S.", "a.m."
    if word in _MAYBE_ABBREV:
        rest = buf[after:].lstrip()
        if not rest:
            return None
        return rest[0].isupper()
    return True


def scan(buf: str, final: bool) -> list[_Event]:
    """Cut points of ``buf`` in order, as far as they can be decided without more text."""
    events: list[_Event] = []
    n = len(buf)
    i = 0
    while i < n:
        ch = buf[i]
        if ch == "[":
            end = _markup_end(buf, i, final)
            if end == -1:
                return events
            if end is not None:
                i = end
                continue
        if ch == "\n":
            events.append(_Event(i + 1, "sentence"))
            i += 1
            continue
        if ch.isspace():
            if i > 0 and not buf[i - 1].isspace():
                events.append(_Event(i, "word"))
            i += 1
            continue
        if ch in _SENT_ASCII or ch in _SENT_CJK:
            j = i
            while j < n and buf[j] in _SENT_ASCII + _SENT_CJK:
                j += 1
            while j < n and buf[j] in _CLOSERS:
                j += 1
            if j == n and not final:
                return events
            cjk = any(c in _SENT_CJK for c in buf[i:j])
            ends = cjk or j == n or buf[j].isspace()
            if ends and buf[i:j].rstrip(_CLOSERS) == "." and i > 0:
                verdict = _period_ends_sentence(buf, i, j)
                if verdict is None:
                    if not final:
                        return events
                    verdict = True
                ends = verdict
            if ends:
                events.append(_Event(j, "sentence"))
            i = j
            continue
        if ch in _CLAUSE_ASCII or ch in _CLAUSE_ANY:
            j = i + 1
            while j < n and buf[j] in _CLOSERS:
                j += 1
            if j == n and not final:
                return events
            if ch in _CLAUSE_ANY or j == n or buf[j].isspace():
                events.append(_Event(j, "clause"))
            i = j
            continue
        if _is_cjk(ch):
            if i + 1 == n and not final:
                return events
            if i + 1 < n and _is_cjk(buf[i + 1]):
                events.append(_Event(i + 1, "word"))
        i += 1
    return events


class IncrementalSegmenter:
    """Cuts streamed text into segments: a short first one, then growing groups of whole sentences."""

    def __init__(self, first_segment_words: int = 6, max_segment_chars: int = 400) -> None:
        if first_segment_words < 1 or max_segment_chars < 20:
            raise ValueError("first_segment_words must be >= 1 and max_segment_chars >= 20")
        self.first_segment_words = first_segment_words
        self.max_segment_chars = max_segment_chars
        self._buf = ""
        self._pending = ""
        self._emitted = 0

    def push(self, fragment: str) -> list[TextSegment]:
        """Add text; return the segments that are now complete."""
        self._buf += fragment
        out: list[TextSegment] = []
        while self._step(final=False, out=out):
            pass
        return out

    def flush(self) -> list[TextSegment]:
        """Return everything still buffered; the next text starts a new utterance (short first segment)."""
        out: list[TextSegment] = []
        while self._step(final=True, out=out):
            pass
        self._emit_pending(out)
        rest = self._buf.strip()
        if rest:
            out.append(TextSegment(rest, "none"))
        self._buf = ""
        self._emitted = 0
        return out

    @property
    def buffered(self) -> str:
        return (self._pending + " " + self._buf).strip()

    # --- internals -----------------------------------------------------------------
    def _limit(self) -> int:
        """Soft size of the current group: doubles with every segment, up to the maximum."""
        base = max(self.max_segment_chars // 4, 1)
        return min(self.max_segment_chars, base * 2 ** max(self._emitted - 1, 0))

    def _emit(self, out: list[TextSegment], text: str, boundary: Boundary) -> None:
        text = text.strip()
        if text:
            out.append(TextSegment(text, boundary))
            self._emitted += 1

    def _emit_pending(self, out: list[TextSegment]) -> None:
        if self._pending:
            self._emit(out, self._pending, "sentence")
            self._pending = ""

    def _take(self, pos: int) -> str:
        piece, self._buf = self._buf[:pos], self._buf[pos:].lstrip()
        return piece.strip()

    def _step(self, final: bool, out: list[TextSegment]) -> bool:
        self._buf = self._buf.lstrip()
        if not self._buf:
            return False
        events = scan(self._buf, final)
        if self._emitted == 0 and not self._pending:
            return self._first_step(events, out)
        limit = self._limit()
        sentence = next((e for e in events if e.kind == "sentence"), None)
        if sentence is not None and len(self._buf[: sentence.pos].strip()) <= self.max_segment_chars:
            text = self._take(sentence.pos)
            if self._pending and len(self._pending) + 1 + len(text) > limit:
                self._emit_pending(out)
            self._pending = (self._pending + " " + text).strip()
            if len(self._pending) >= self._limit():
                self._emit_pending(out)
            return True
        partial = self._buf[: sentence.pos] if sentence is not None else self._buf
        if self._pending and len(self._pending) + 1 + len(partial.strip()) > limit:
            self._emit_pending(out)
        if sentence is not None or len(self._buf.rstrip()) > self.max_segment_chars:
            self._emit_pending(out)
            self._cut_long(events, out)
            return True
        return False

    def _first_step(self, events: list[_Event], out: list[TextSegment]) -> bool:
        need = self.first_segment_words
        latin = cjk = previous = 0
        for event in events:
            if event.kind == "sentence":
                self._emit(out, self._take(event.pos), "sentence")
                return True
            more_latin, more_cjk = _word_parts(self._buf[previous : event.pos])
            latin, cjk, previous = latin + more_latin, cjk + more_cjk, event.pos
            words = latin + (cjk + 1) // 2
            if event.kind == "clause" and words >= need:
                self._emit(out, self._take(event.pos), "clause")
                return True
            if event.kind == "word" and words >= 2 * need:
                self._emit(out, self._take(event.pos), "none")
                return True
            if len(self._buf[: event.pos].strip()) > self.max_segment_chars:
                break
        if len(self._buf.rstrip()) > self.max_segment_chars:
            self._cut_long(events, out)
            return True
        return False

    def _cut_long(self, events: list[_Event], out: list[TextSegment]) -> None:
        """Cut a piece of at most max_segment_chars: at the last clause, else the last word boundary."""
        limit = self.max_segment_chars
        fitting = [e for e in events if len(self._buf[: e.pos].strip()) <= limit and e.kind != "sentence"]
        clauses = [e for e in fitting if e.kind == "clause"]
        if clauses:
            self._emit(out, self._take(clauses[-1].pos), "clause")
        elif fitting:
            self._emit(out, self._take(fitting[-1].pos), "none")
        else:
            self._emit(out, self._take(limit), "none")


def split_text(text: str, first_segment_words: int = 6, max_segment_chars: int = 400) -> list[TextSegment]:
    """Segments of a whole text (the same ones the incremental segmenter gives for it)."""
    segmenter = IncrementalSegmenter(first_segment_words, max_segment_chars)
    return segmenter.push(text) + segmenter.flush()


def split_sentences(text: str) -> list[TextSegment]:
    """Every sentence of ``text`` on its own (no merging, no first-segment rule)."""
    buf = text.strip()
    out: list[TextSegment] = []
    start = 0
    for event in scan(buf, final=True):
        if event.kind == "sentence":
            piece = buf[start : event.pos].strip()
            if piece:
                out.append(TextSegment(piece, "sentence"))
            start = event.pos
    rest = buf[start:].strip()
    if rest:
        out.append(TextSegment(rest, "none"))
    return out
