"""G2P through espeak-ng (phonemizer-fork + the library and data bundled by espeakng-loader).

Two outputs: raw espeak IPA with stress marks and punctuation (Piper's alphabet, "espeak"), or
the same mapped into Kokoro's vocabulary ("misaki"), as Kokoro's non-English voices were trained.
Output stays per word so that word timings can be computed later.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

import espeakng_loader
from phonemizer.backend import EspeakBackend
from phonemizer.backend.espeak.wrapper import EspeakWrapper
from phonemizer.separator import Separator

from voxserve.text.languages import ESPEAK_VOICE, Alphabet
from voxserve.text.vocab_map import clean_espeak, espeak_to_kokoro
from voxserve.types import PhonemeWord

log = logging.getLogger(__name__)

PUNCTUATION = ';:,.!?¡¿—…"«»“”(){}[]'
_WORD_SEP = "|"
_DASHES = re.compile(r"\s*(—|–|…)\s*")
_CJK_PUNCT = str.maketrans(
    {
        "、": ", ", "，": ", ", "。": ". ", "．": ". ", "！": "! ", "？": "? ", "：": ": ", "；": "; ", "।": ". ",
        "「": " “", "」": "” ", "『": " “", "』": "” ", "《": " “", "》": "” ", "（": " (", "）": ") ",
    }
)  # fmt: skip


def ascii_punctuation(text: str) -> str:
    """CJK and Devanagari punctuation → the ASCII marks espeak keeps (and Kokoro knows)."""
    return text.translate(_CJK_PUNCT)


def configure_espeak() -> None:
    """Point phonemizer at espeakng-loader's library and voice data (idempotent)."""
    EspeakWrapper.set_library(espeakng_loader.get_library_path())
    EspeakWrapper.set_data_path(espeakng_loader.get_data_path())


def make_backend(voice: str, *, tie: bool) -> EspeakBackend:
    configure_espeak()
    return EspeakBackend(
        language=voice,
        preserve_punctuation=True,
        with_stress=True,
        tie="^" if tie else False,
        language_switch="remove-flags",
        words_mismatch="ignore",
    )


_CLOSING = set(",.;:!?…)]}”»")
_OPENING = set("([{“«¿¡")


def _strip_edges(text: str, marks: str) -> tuple[str, str, str]:
    core = text.lstrip(marks)
    lead = text[: len(text) - len(core)]
    inner = core.rstrip(marks)
    trail = core[len(inner) :]
    return lead, inner, trail


def split_punctuation(text_word: str, phonemes: str, convert: bool) -> list[PhonemeWord]:
    """One text word and its phonemes → words with leading/trailing punctuation as their own tokens."""
    t_lead, t_core, t_trail = _strip_edges(text_word, PUNCTUATION + "'")
    p_lead, p_core, p_trail = _strip_edges(phonemes, PUNCTUATION)
    if convert:
        p_lead, p_core, p_trail = espeak_to_kokoro(p_lead), espeak_to_kokoro(p_core), espeak_to_kokoro(p_trail)
    else:
        p_lead, p_core, p_trail = clean_espeak(p_lead), clean_espeak(p_core), clean_espeak(p_trail)
    if not p_core.strip():
        marks = (p_lead + p_trail).strip()
        opening = bool(marks) and all(ch in _OPENING for ch in marks)
        return [PhonemeWord(text_word, marks, space_after=not opening)] if marks else []
    out: list[PhonemeWord] = []
    if p_lead.strip():
        out.append(PhonemeWord(t_lead or p_lead, p_lead.strip(), space_after=False))
    out.append(PhonemeWord(t_core or text_word, p_core.strip(), space_after=not p_trail.strip()))
    if p_trail.strip():
        out.append(PhonemeWord(t_trail or p_trail, p_trail.strip()))
    return out


def attach_punctuation(words: list[PhonemeWord]) -> list[PhonemeWord]:
    """No word separator before closing punctuation ("word ," → "word,")."""
    out: list[PhonemeWord] = []
    for word in words:
        if out and word.phonemes and all(ch in _CLOSING for ch in word.phonemes) and out[-1].space_after:
            out[-1] = replace(out[-1], space_after=False)
        out.append(word)
    return out


class EspeakG2P:
    """espeak-ng G2P for one language; not thread-safe (the Frontend holds a lock around calls)."""

    def __init__(self, lang: str, alphabet: Alphabet) -> None:
        self.lang = lang
        self.alphabet = alphabet
        self._convert = alphabet == "misaki"
        self._backend = make_backend(ESPEAK_VOICE[lang], tie=self._convert)

    def _phonemize(self, text: str, separator: Separator) -> str:
        result = self._backend.phonemize([text], separator=separator, strip=True)
        return result[0] if result else ""

    def word_phonemes(self, words: list[str]) -> list[str]:
        """Phonemes of each text word, in context when espeak keeps the word count, else word by word."""
        sep = Separator(phone="", word=_WORD_SEP, syllable="")
        joined = self._phonemize(" ".join(words), sep)
        parts = [p.strip() for p in joined.split(_WORD_SEP)]
        if len(parts) == len(words):
            return parts
        no_sep = Separator(phone="", word=" ", syllable="")
        return [self._phonemize(word, no_sep).strip() for word in words]

    def __call__(self, text: str) -> list[PhonemeWord]:
        words = _DASHES.sub(r" \1 ", ascii_punctuation(text)).split()
        return self.phonemize_words(words, words)

    def phonemize_words(self, texts: list[str], spoken: list[str]) -> list[PhonemeWord]:
        """Words labelled ``texts`` whose pronunciation is that of ``spoken`` (same length)."""
        if not spoken:
            return []
        out: list[PhonemeWord] = []
        for text, word, phonemes in zip(texts, spoken, self.word_phonemes(spoken), strict=True):
            out.extend(split_punctuation(text if text.strip() else word, phonemes, self._convert))
        return attach_punctuation(out)
