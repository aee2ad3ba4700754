"""Pronunciation dictionaries: words (or, in server files, regular expressions) spoken as given phonemes
or read as given text, for brand names, people and jargon.

Entries come from the server's file (``VOXSERVE_LEXICON``, per language) and from the request (a bounded
list, whole words only: a client's regular expression could take the server's time). A phoneme entry
becomes an inline ``[word](/phonemes/)`` span (see :mod:`.markup`), so it is spoken exactly as given; a
text entry replaces the word before normalization. Phonemes are checked against the voice's alphabet,
and unknown symbols are refused by name.

File format (JSON), keyed by language (``"*"``: every language)::

    {"en-us": [{"word": "Kokoro", "phonemes": "kˈOkəɹO", "alphabet": "misaki"},
               {"word": "k8s", "text": "kubernetes"},
               {"regex": "\\\\bv(\\\\d+)\\\\.(\\\\d+)\\\\b", "text": "version \\\\1 point \\\\2"}]}
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from voxserve.errors import InvalidInput
from voxserve.text.languages import Alphabet, normalize_lang
from voxserve.text.markup import check_phonemes, parse_markup
from voxserve.types import LexiconEntry

MAX_REQUEST_ENTRIES = 64
MAX_MATCH_CHARS = 100
MAX_VALUE_CHARS = 300
_ALPHABETS = ("misaki", "espeak")


def parse_entries(items: object, *, allow_regex: bool = False, where: str = "lexicon") -> tuple[LexiconEntry, ...]:
    """Entries from JSON-like data: ``[{"word" | "regex": …, "phonemes" | "text": …, "alphabet"?: …}]``.
    Raises :class:`InvalidInput` naming what is wrong and where."""
    if items is None:
        return ()
    if not isinstance(items, list):
        raise InvalidInput(f"{where} must be a list of entries")
    if not allow_regex and len(items) > MAX_REQUEST_ENTRIES:
        raise InvalidInput(f"{where} has {len(items)} entries; a request may carry at most {MAX_REQUEST_ENTRIES}")
    return tuple(_entry(item, allow_regex, f"{where}[{i}]") for i, item in enumerate(items))


def _entry(item: object, allow_regex: bool, where: str) -> LexiconEntry:
    if not isinstance(item, dict):
        raise InvalidInput(f"{where} must be an object with 'word' and 'phonemes' or 'text'")
    unknown = set(item) - {"word", "regex", "phonemes", "text", "alphabet"}
    if unknown:
        raise InvalidInput(f"{where} has unknown fields: {', '.join(sorted(unknown))}")
    regex = "regex" in item
    if regex and not allow_regex:
        raise InvalidInput(f"{where}: 'regex' entries are only accepted in the server's lexicon file; use 'word'")
    match = item.get("regex" if regex else "word")
    if not isinstance(match, str) or not match.strip() or len(match) > MAX_MATCH_CHARS:
        raise InvalidInput(f"{where} needs a 'word' (or 'regex') of 1 to {MAX_MATCH_CHARS} characters")
    if regex:
        try:
            re.compile(match)
        except re.error as exc:
            raise InvalidInput(f"{where}: bad regular expression {match!r}: {exc}") from None
    elif "[" in match or "]" in match:
        raise InvalidInput(f"{where}: a word cannot contain '[' or ']'")
    phonemes, text = item.get("phonemes"), item.get("text")
    if (phonemes is None) == (text is None):
        raise InvalidInput(f"{where} needs exactly one of 'phonemes' and 'text'")
    value = phonemes if phonemes is not None else text
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_VALUE_CHARS:
        raise InvalidInput(f"{where}: 'phonemes'/'text' must be a string of 1 to {MAX_VALUE_CHARS} characters")
    if phonemes is not None and any(ch in phonemes for ch in "()/[]\n"):
        raise InvalidInput(f"{where}: phonemes cannot contain ( ) / [ ] or line breaks")
    alphabet = item.get("alphabet")
    if alphabet is not None and alphabet not in _ALPHABETS:
        raise InvalidInput(f"{where}: alphabet must be one of {', '.join(_ALPHABETS)}")
    return LexiconEntry(match.strip() if not regex else match, phonemes, text, regex, alphabet)


def load_lexicon(path: Path) -> dict[str, tuple[LexiconEntry, ...]]:
    """A lexicon file: entries per language (``"*"`` for all), regular expressions allowed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read lexicon {path}: {exc}") from None
    if isinstance(data, list):
        data = {"*": data}
    if not isinstance(data, dict):
        raise InvalidInput(f"lexicon {path} must map languages to lists of entries")
    lexicon: dict[str, tuple[LexiconEntry, ...]] = {}
    for lang, items in data.items():
        entries = parse_entries(items, allow_regex=True, where=f"{path}:{lang}")
        for entry in entries:
            if entry.phonemes is not None:  # a file serves voices of both alphabets: each entry says which
                if entry.alphabet is None:
                    raise InvalidInput(f"{path}:{lang}: phoneme entry {entry.match!r} needs an 'alphabet'")
                for_voice([entry], entry.alphabet, strict=True)  # type: ignore[arg-type]
        lexicon[lang if lang == "*" else normalize_lang(lang)] = entries
    return lexicon


def for_voice(entries: Sequence[LexiconEntry], alphabet: Alphabet, *, strict: bool) -> tuple[LexiconEntry, ...]:
    """The entries a voice of ``alphabet`` can use, phonemes checked and normalized. ``strict`` (the
    caller's entries): an entry for another alphabet or with unknown symbols is refused, naming them;
    otherwise (the server's) entries for another alphabet are left out."""
    kept: list[LexiconEntry] = []
    for entry in entries:
        if entry.phonemes is None:
            kept.append(entry)
            continue
        if entry.alphabet not in (None, alphabet):
            if strict:
                raise InvalidInput(f"lexicon entry {entry.match!r} is in {entry.alphabet}; this voice uses {alphabet}")
            continue
        try:
            phonemes = check_phonemes(entry.phonemes, alphabet)
        except InvalidInput as exc:
            raise InvalidInput(f"lexicon entry {entry.match!r}: {exc.message}") from None
        kept.append(replace(entry, phonemes=phonemes))
    return tuple(kept)


def apply_lexicon(text: str, entries: Sequence[LexiconEntry]) -> str:
    """``text`` with each match spoken as its entry says (the first entry that matches wins). Text the
    caller already marked up with phonemes is left alone."""
    if not entries:
        return text
    parts = []
    for i, entry in enumerate(entries):
        pattern = entry.match if entry.regex else rf"(?i:(?<!\w){re.escape(entry.match)}(?!\w))"
        parts.append(f"(?P<e{i}>{pattern})")
    combined = re.compile("|".join(parts))

    def speak(found: re.Match[str]) -> str:
        entry = entries[int(str(found.lastgroup)[1:])]
        matched = found.group(0)
        if entry.text is not None:  # a regex's own groups, as in re.sub
            return re.sub(entry.match, entry.text, matched, count=1) if entry.regex else entry.text
        word = matched.replace("[", "").replace("]", "")
        return f"[{word}](/{entry.phonemes}/)" if 0 < len(word) <= MAX_MATCH_CHARS else matched

    out: list[str] = []
    for span in parse_markup(text):
        out.append(f"[{span.text}](/{span.phonemes}/)" if span.phonemes is not None else combined.sub(speak, span.text))
    return "".join(out)
