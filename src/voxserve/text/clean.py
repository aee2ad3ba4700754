"""Input hygiene shared by every language: control characters, odd spaces, emoji, emptiness."""

from __future__ import annotations

import re
import unicodedata

from voxserve.errors import InvalidInput
from voxserve.text.scripts import script_of

_KEEP_SYMBOLS = set("°℃℉©®™€£¥₹$¢%&@+=×÷#")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")
# The longest number read aloud, in any language. One token must not read as hundreds of words (a
# segment is spoken once it is read whole: that would delay the first audio), and the readers parse
# numbers with int(), whose cost grows with the square of the digits (Python refuses past 4,300).
MAX_DIGITS = 100
# a number with more digits than that, contiguous or in thousands groups ("1,000,…"), in any script
_LONG_NUMBER_RE = re.compile(rf"\d{{{MAX_DIGITS + 1},}}|\d{{1,3}}(?:,\d{{3}}){{{MAX_DIGITS // 3},}}")


def check_numbers(text: str) -> None:
    """Refuse ``text`` (InvalidInput) if it holds a number too long to read, before anything parses it."""
    found = _LONG_NUMBER_RE.search(text)
    if found is not None:
        check_digits(sum(ch.isdigit() for ch in found.group()))


def check_digits(count: int) -> None:
    """Refuse a number of more than MAX_DIGITS digits with a clear error."""
    if count > MAX_DIGITS:
        raise InvalidInput(
            f"a number of more than {MAX_DIGITS} digits is too long to read aloud; "
            "split it into groups separated by spaces"
        )


# Invisible characters that separate words: the zero-width space, the invisible operators and the
# Mongolian vowel separator (controls such as NUL count too). Other format characters (soft hyphen,
# word joiner, byte order mark) sit inside words and are dropped.
_INVISIBLE_BREAKS = frozenset("\u200b\u2062\u2063\u2064\u180e")
# Zero-width (non-)joiners shape letters in the scripts that use them (Devanagari, Arabic, Persian…);
# between letters of other scripts, or next to anything else, they only hide a word break.
_JOINERS = frozenset("\u200c\u200d")
_UNJOINED_SCRIPTS = frozenset({"Latin", "Cyrillic", "Greek", "Han", "Kana", "Hangul"})


def is_word_break(text: str, i: int) -> bool:
    """Whether the invisible character ``text[i]`` separates the words around it (see above)."""
    ch = text[i]
    if ch in _INVISIBLE_BREAKS or (unicodedata.category(ch) == "Cc" and ch not in "\n\t"):
        return True
    if ch not in _JOINERS:
        return False
    j = i - 1
    while j >= 0 and unicodedata.category(text[j]).startswith("M"):  # a virama or vowel sign: its letter's
        j -= 1
    before = script_of(text[j]) if j >= 0 else None
    return before is None or before in _UNJOINED_SCRIPTS


def clean_text(text: str) -> str:
    """NFC-normalize; invisible separators become spaces; drop other control/format characters and
    emoji; keep newlines; collapse spaces."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch in "\n\t":
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn"):
            if is_word_break(text, i):
                out.append(" ")
            continue
        if category in ("So", "Sk") and ch not in _KEEP_SYMBOLS:
            out.append(" ")
            continue
        out.append(ch)
    cleaned = _SPACES.sub(" ", "".join(out))
    cleaned = re.sub(r" +([,.;:!?])(?=\s|$)", r"\1", cleaned)
    return re.sub(r" *\n[ \n]*", "\n", cleaned).strip()


def is_speakable(text: str) -> bool:
    """True when ``text`` holds at least one letter or digit."""
    return any(unicodedata.category(ch)[0] in "LN" for ch in text)


def strip_controls(text: str) -> str:
    """Drop control/format characters only (for phoneme input, which must not be re-normalized)."""
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf"))
