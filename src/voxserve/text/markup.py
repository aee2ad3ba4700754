"""Caller-supplied phonemes: inline ``[word](/phonemes/)`` spans and whole-phoneme input."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from voxserve.errors import InvalidInput
from voxserve.text.languages import Alphabet
from voxserve.text.vocab_map import alphabet_symbols

MARKUP_RE = re.compile(r"\[([^\[\]\n]{1,100})\]\(/([^()\n]{0,300})/\)")


@dataclass(frozen=True)
class Span:
    """A run of input text; ``phonemes`` is set when the caller gave its pronunciation."""

    text: str
    phonemes: str | None = None


def parse_markup(text: str) -> list[Span]:
    spans: list[Span] = []
    last = 0
    for match in MARKUP_RE.finditer(text):
        if match.start() > last:
            spans.append(Span(text[last : match.start()]))
        spans.append(Span(match.group(1), match.group(2).strip()))
        last = match.end()
    if last < len(text):
        spans.append(Span(text[last:]))
    return spans


def strip_markup(text: str) -> str:
    """The text as it reads: ``[word](/ipa/)`` → ``word``."""
    return MARKUP_RE.sub(lambda m: m.group(1), text)


def check_markup(text: str, alphabet: Alphabet) -> None:
    """Refuse inline ``[word](/phonemes/)`` spans of ``text`` whose phonemes are empty or hold symbols
    ``alphabet`` lacks, naming them. Checked on the text as sent: cleaning it first would turn a stray
    symbol into a word break, or leave the span empty and its word unspoken, and speak the rest."""
    for match in MARKUP_RE.finditer(text):
        word, phonemes = match.group(1), unicodedata.normalize("NFC", match.group(2))
        if not phonemes.strip():
            raise InvalidInput(f"[{word}](//) has no phonemes; put the word's pronunciation between the slashes")
        check_phonemes(phonemes, alphabet)


def check_phonemes(phonemes: str, alphabet: Alphabet) -> str:
    """Return ``phonemes`` in the alphabet's code points, or raise InvalidInput naming unknown symbols.

    Precomposed letters the alphabet only knows decomposed (``õ`` → ``o`` + U+0303) are decomposed.
    """
    known = alphabet_symbols(alphabet)
    out: list[str] = []
    unknown: list[str] = []
    for ch in phonemes:
        if ch in known:
            out.append(ch)
            continue
        if ch.isspace():
            out.append(" ")
            continue
        parts = unicodedata.normalize("NFD", ch)
        if len(parts) > 1 and all(p in known for p in parts):
            out.append(parts)
        elif ch not in unknown:
            unknown.append(ch)
    if unknown:
        listed = ", ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in unknown)
        raise InvalidInput(f"phonemes contain symbols the {alphabet!r} alphabet does not have: {listed}")
    return re.sub(r" {2,}", " ", "".join(out)).strip()
