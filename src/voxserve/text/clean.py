"""Input hygiene shared by every language: control characters, odd spaces, emoji, emptiness."""

from __future__ import annotations

import re
import unicodedata

_KEEP_SYMBOLS = set("°℃℉©®™€£¥₹$¢%&@+=×÷#")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")


def clean_text(text: str) -> str:
    """NFC-normalize; drop control/format characters and emoji; keep newlines; collapse spaces."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    out: list[str] = []
    for ch in text:
        if ch in "\n\t":
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs", "Co", "Cn"):
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
