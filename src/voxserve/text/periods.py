"""Whether a period ends a sentence: abbreviations, initials, dotted forms and list numbers.

Used by the segmenter while text streams in: every answer looks at the text already received and at
most the next word, and is None while that word may still grow.
"""

from __future__ import annotations

import re

# Words whose trailing period never ends a sentence: titles (a name follows, "Dr. Smith") and
# abbreviations that always introduce something ("e.g. Fuji", "Fig. 3", "vs. Smith").
_ALWAYS_ABBREV = {
    "mr", "mrs", "ms", "dr", "prof", "gen", "capt", "sgt", "rev", "mt", "e.g", "i.e", "vs", "cf", "approx", "fig",
    "vol",
}  # fmt: skip
# Abbreviations that are also a word of a name ("St. Louis", "U.S. Army", "King Jr. Day"): the period
# ends a sentence only before a word that starts sentences but is never part of a name ("Main St. We").
_NAME_ABBREV = {"st", "ave", "blvd", "jr", "sr"}
# Abbreviations whose period ends a sentence whenever an upper-case letter follows ("5 p.m. We", "etc. Then").
_MAYBE_ABBREV = {
    "etc", "inc", "ltd", "co", "no", "corp", "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
}  # fmt: skip
# Capitalised words that begin sentences and are not names (checked after the words in _NAME_ABBREV).
SENTENCE_STARTERS = {
    "i", "we", "you", "he", "she", "it", "they", "the", "a", "an", "this", "that", "these", "those", "there", "then",
    "but", "and", "so", "or", "if", "when", "what", "why", "how", "who", "where", "my", "our", "your", "his", "her",
    "its", "their", "in", "on", "at", "after", "before", "now", "yes", "no", "please", "also", "however", "thanks",
    "today", "tomorrow", "yesterday", "let", "let's", "i'm", "it's", "we're", "they're", "there's",
}  # fmt: skip
# Dotted abbreviations of one- or two-letter parts: "U.S", "a.m", "Ph.D", "M.Sc" (not "www.example.com").
_DOTTED = re.compile(r"(?:[a-z]{1,2}\.)+[a-z]{1,2}", re.IGNORECASE)


def _line_starts_at(buf: str, pos: int, line_start: bool) -> bool:
    """Whether only spaces separate ``pos`` from the start of its line (``line_start``: buf[0] starts one)."""
    while pos > 0 and buf[pos - 1] in " \t":
        pos -= 1
    return buf[pos - 1] == "\n" if pos > 0 else line_start


def _skip_blanks(buf: str, pos: int) -> int:
    while pos < len(buf) and buf[pos].isspace():
        pos += 1
    return pos


def _next_word(buf: str, after: int, final: bool) -> str | None:
    """The word after ``after`` (letters and apostrophes); None while it may still grow."""
    start = end = _skip_blanks(buf, after)
    if start == len(buf):
        return None
    while end < len(buf) and (buf[end].isalpha() or buf[end] in "'’"):
        end += 1
    if end == len(buf) and not final:
        return None
    return buf[start:end] if end > start else buf[start]


def period_ends_sentence(buf: str, dot: int, after: int, final: bool, line_start: bool) -> bool | None:
    """Whether the single '.' at ``dot`` ends a sentence; None when more text is needed to tell."""
    start = dot
    while start > 0 and not buf[start - 1].isspace():
        start -= 1
    raw = buf[start:dot]
    word = raw.lstrip("\"'“‘([{").lower()
    if raw.isdigit() and len(raw) <= 3 and _line_starts_at(buf, start, line_start):
        return False  # a list number ("1. First item") belongs to its line
    if word in _ALWAYS_ABBREV:
        return False
    if len(word) == 1 and word.isalpha() and buf[dot - 1].isupper():
        return False  # an initial: "J. K. Rowling"
    dotted = bool(_DOTTED.fullmatch(word))
    if word in _NAME_ABBREV or (dotted and any(c.isupper() for c in raw)):
        # "St."/"U.S."/"Ph.D." followed by a capital is usually a name ("St. Louis", "U.S. Army").
        following = _next_word(buf, after, final)
        if following is None:
            return None
        return following[:1].isupper() and following.lower().replace("’", "'") in SENTENCE_STARTERS
    if dotted or word in _MAYBE_ABBREV:
        # "a.m.", "etc.": a capitalised word after it starts a new sentence ("at 5 p.m. We left").
        start = _skip_blanks(buf, after)
        return buf[start].isupper() if start < len(buf) else None
    return True
