"""Cutting phonemized words into PhonemeSegments that fit a model's phoneme limit."""

from __future__ import annotations

from voxserve.types import Boundary, PhonemeSegment, PhonemeWord

_CLAUSE_MARKS = set(",;:—")
_SENTENCE_MARKS = set(".!?…")


def phoneme_length(words: list[PhonemeWord] | tuple[PhonemeWord, ...]) -> int:
    """Symbols the model sees for these words (separators included, edges stripped)."""
    return len(PhonemeSegment("", tuple(words), "").phonemes)


def words_text(words: list[PhonemeWord]) -> str:
    return "".join(w.text + (" " if w.space_after else "") for w in words).strip()


def _is_clause_end(word: PhonemeWord) -> bool:
    return bool(word.phonemes) and word.phonemes[-1] in _CLAUSE_MARKS | _SENTENCE_MARKS


def _split_long_word(word: PhonemeWord, limit: int) -> list[list[PhonemeWord]]:
    ps = word.phonemes
    return [[PhonemeWord(word.text, ps[i : i + limit])] for i in range(0, len(ps), limit)]


def fit_words(
    words: list[PhonemeWord], text: str, lang: str, boundary: Boundary, max_phonemes: int
) -> list[PhonemeSegment]:
    """One segment when it fits; else pieces cut after clause punctuation, else between words."""
    if max_phonemes < 1:
        raise ValueError("max_phonemes must be positive")
    whole = PhonemeSegment(text, tuple(words), lang, boundary)
    if len(whole.phonemes) <= max_phonemes:
        return [whole] if whole.phonemes else []
    pieces: list[tuple[list[PhonemeWord], Boundary]] = []
    current: list[PhonemeWord] = []
    for word in words:
        if phoneme_length([*current, word]) <= max_phonemes:
            current.append(word)
            continue
        if not current:
            pieces.extend((chunk, "none") for chunk in _split_long_word(word, max_phonemes))
            continue
        cut = max((i + 1 for i, w in enumerate(current) if _is_clause_end(w)), default=0)
        if cut == 0:
            cut = len(current)
        piece_boundary: Boundary = "clause" if _is_clause_end(current[cut - 1]) else "none"
        pieces.append((current[:cut], piece_boundary))
        current = current[cut:]
        while current and phoneme_length([*current, word]) > max_phonemes:
            pieces.append((current, "none"))
            current = []
        if phoneme_length([word]) > max_phonemes:
            pieces.extend((chunk, "none") for chunk in _split_long_word(word, max_phonemes))
        else:
            current.append(word)
    if current:
        pieces.append((current, boundary))
    elif pieces:
        pieces[-1] = (pieces[-1][0], boundary)
    out = [PhonemeSegment(words_text(chunk), tuple(chunk), lang, b) for chunk, b in pieces]
    return [seg for seg in out if seg.phonemes]


def sentence_words(phonemes: str) -> list[tuple[list[PhonemeWord], Boundary]]:
    """Whole-phoneme input as words, grouped into sentences at . ! ? …"""
    groups: list[tuple[list[PhonemeWord], Boundary]] = []
    current: list[PhonemeWord] = []
    for token in phonemes.split():
        current.append(PhonemeWord(token, token))
        if token[-1] in _SENTENCE_MARKS:
            groups.append((current, "sentence"))
            current = []
    if current:
        groups.append((current, "none"))
    return groups
