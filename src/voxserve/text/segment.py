"""Sentence and clause segmentation, for whole texts and for text that arrives in fragments.

Every decision depends only on the characters already received plus a little lookahead (one
character, or the next whole word after an abbreviation), so feeding a text token by token gives
the same segments as feeding it at once (:func:`split_text` is exactly ``push(text) + flush()``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from voxserve.text.markup import MARKUP_RE
from voxserve.text.periods import period_ends_sentence
from voxserve.types import Boundary

_SENT_ASCII = ".!?…।"
_SENT_CJK = "。！？．"
_CLAUSE_ASCII = ",;:"
_CLAUSE_ANY = "，、；：—"  # a boundary whatever follows (CJK text has no spaces; dashes often touch words)
_CLOSERS = "\"'”’)]}」』》】）"
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
# the characters a cut point can be at: all others are skipped over
_SPECIAL = re.compile("[\\[\\s" + re.escape(_SENT_ASCII + _SENT_CJK + _CLAUSE_ASCII + _CLAUSE_ANY) + _CJK_CLASS + "]")
_MARKUP_RE = MARKUP_RE
_MARKUP_MAX = 420
_LOOKAHEAD = _MARKUP_MAX + 100
_FIRST_SCAN = 160

# "number" is a word boundary right after a token with a digit: cut there only when nothing else fits.
EventKind = Literal["sentence", "clause", "word", "number"]


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


def _has_digit_before(buf: str, pos: int) -> bool:
    """Whether the token ending at ``pos`` contains a digit ("$5", "72", "3.5")."""
    start = pos
    while start > 0 and not buf[start - 1].isspace():
        start -= 1
        if buf[start].isdigit():
            return True
    return False


def scan(buf: str, final: bool, line_start: bool = True) -> list[_Event]:
    """Cut points of ``buf`` in order, as far as they can be decided without more text.

    ``line_start`` says whether ``buf`` begins a line (a list number "2." is recognised there).
    """
    events: list[_Event] = []
    n = len(buf)
    i = 0
    while i < n:
        special = _SPECIAL.search(buf, i)  # other characters never make a cut point: skip them
        if special is None:
            break
        i = special.start()
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
                # After a number the next word may be its unit or scale ("$5 million", "72 °F", "5 km"),
                # and the normalizer must see both together: such a boundary is a last resort only.
                events.append(_Event(i, "number" if _has_digit_before(buf, i) else "word"))
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
                verdict = period_ends_sentence(buf, i, j, final, line_start)
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
        self._line_start = True  # whether _buf begins a line

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
        self._line_start = True
        return out

    @property
    def buffered(self) -> str:
        return (self._pending + " " + self._buf).strip()

    def ends_in_abbreviation(self) -> bool:
        """Whether the buffered text ends with a period that ends no sentence however the text goes on: a
        title or abbreviation that always introduces something ("Dr.", "e.g."), an initial ("J."), or a
        list number at the start of a line ("2."). A stream whose text pauses there (an LLM between two
        tokens) waits for the word that follows rather than speak "I met Dr." as a sentence."""
        buf = self._buf.rstrip()
        dot = len(buf) - 1
        if dot < 1 or buf[dot] != "." or buf[dot - 1] == ".":
            return False
        return period_ends_sentence(buf, dot, len(buf), True, self._line_start) is False

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

    def _consume(self, pos: int) -> str:
        """Drop ``_buf[:pos]`` and the blanks after it, noting whether what remains begins a line."""
        rest = self._buf[pos:].lstrip()
        consumed = self._buf[: len(self._buf) - len(rest)]
        body = consumed.rstrip()
        if body:
            self._line_start = "\n" in consumed[len(body) :]
        elif "\n" in consumed:
            self._line_start = True  # blanks only: a newline among them still starts a line
        self._buf = rest
        return consumed

    def _take(self, pos: int) -> str:
        return self._consume(pos)[:pos].strip()

    def _step(self, final: bool, out: list[TextSegment]) -> bool:
        self._consume(0)
        if not self._buf:
            return False
        events = self._events(final)
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

    def _events(self, final: bool) -> list[_Event]:
        """The cut points of the buffer's head, as many as the next cut needs.

        Every decision is about the first max_segment_chars, and up to the first sentence end; a
        prefix of the buffer gives a prefix of its cut points (scan stops where it would need more
        text). So the scan grows from a short head until it holds a sentence end, or covers that
        much plus the lookahead a cut point may need (an inline-phoneme span, the word after an
        abbreviation). A long input then costs time linear in its length, not quadratic."""
        limit = self.max_segment_chars + _LOOKAHEAD
        size = min(_FIRST_SCAN, limit)
        while True:
            whole = len(self._buf) <= size
            events = scan(self._buf if whole else self._buf[:size], final and whole, self._line_start)
            if whole or size >= limit or any(event.kind == "sentence" for event in events):
                return events
            size = min(2 * size, limit)

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
            if event.kind == "word" and words >= 2 * need:  # never a "number" boundary: "$5 | million"
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
        for kind in ("clause", "word", "number"):
            candidates = [e for e in fitting if e.kind == kind]
            if candidates:
                self._emit(out, self._take(candidates[-1].pos), "clause" if kind == "clause" else "none")
                return
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
