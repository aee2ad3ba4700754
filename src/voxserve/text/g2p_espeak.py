"""G2P through espeak-ng (phonemizer-fork + the library and data bundled by espeakng-loader).

Two outputs: raw espeak IPA with stress marks and punctuation (Piper's alphabet, "espeak"), or
the same mapped into Kokoro's vocabulary ("misaki"), as Kokoro's non-English voices were trained.
Output stays per word so that word timings can be computed later.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

import espeakng_loader
from phonemizer.backend import EspeakBackend
from phonemizer.backend.espeak.wrapper import EspeakWrapper
from phonemizer.separator import Separator

from voxserve.text.languages import Alphabet, espeak_voice
from voxserve.text.vocab_map import clean_espeak, espeak_to_kokoro
from voxserve.types import PhonemeWord

log = logging.getLogger(__name__)


class _QuietLogger(logging.Logger):
    """phonemizer's logger: its warnings ("words count mismatch", which word_phonemes handles) and its
    info lines are routine here, so they are logged at debug level instead of reaching the user."""

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.debug(msg, *args, **kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.debug(msg, *args, **kwargs)


# Built directly, not through logging.getLogger, so phonemizer's own get_logger() cannot reconfigure it;
# its records still go through this module's logger (and so to whatever handlers the application set).
_PHONEMIZER_LOG = _QuietLogger(f"{__name__}.phonemizer")
_PHONEMIZER_LOG.parent = log

PUNCTUATION = ';:,.!?¡¿—…"«»“”(){}[]'
_WORD_SEP = "|"
_DASHES = re.compile(r"\s*(—|–|…)\s*")
_CJK_PUNCT = str.maketrans(
    {
        "、": ", ", "，": ", ", "。": ". ", "．": ". ", "！": "! ", "？": "? ", "：": ": ", "；": "; ", "।": ". ",
        "「": " “", "」": "” ", "『": " “", "』": "” ", "《": " “", "》": "” ", "（": " (", "）": ") ",
    }
)  # fmt: skip


# phonemizer cuts its input at every "." and "," (to keep punctuation), so espeak never sees
# "1.000.000" or "3,5" whole ("uno . cero cero cero", "tres, cinco"), and it reads a space-grouped
# French "1 234" as two numbers. So, before espeak: thousands separators go, and a decimal comma
# becomes the word the language reads it as.
_DECIMAL_WORD = {"es": "coma", "it": "virgola", "pt-br": "vírgula", "fr": "virgule"}
_GROUPING = {"es": ".", "it": ".", "pt-br": ".", "fr": " \u00a0\u202f"}  # space, no-break, narrow no-break
_COMMA_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3}){2,}(?![\d]|[.,]\d)")  # "1,000,000": never a decimal
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")


def _grouped_number(separators: str) -> re.Pattern[str]:
    # Groups of exactly three digits after a lead of one to three; not part of a longer run of digits
    # and dots, so dates, versions and IP addresses ("1.2.2024", "192.168.1.1") are left alone.
    seps = re.escape(separators)
    return re.compile(rf"(?<![\d.,])\d{{1,3}}(?:[{seps}]\d{{3}})+(?!\d|\.\d)")


_GROUPED = {lang: _grouped_number(separators) for lang, separators in _GROUPING.items()}


def plain_numbers(text: str, lang: str) -> str:
    """``text`` with numbers written the way espeak reads them in ``lang`` (unchanged for other languages)."""
    word = _DECIMAL_WORD.get(lang)
    if word is None:
        return text
    text = _GROUPED[lang].sub(lambda m: re.sub(r"\D", "", m.group()), text)
    text = _COMMA_GROUPED.sub(lambda m: m.group().replace(",", ""), text)
    return _DECIMAL_COMMA.sub(f" {word} ", text)


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
        logger=_PHONEMIZER_LOG,
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
        self._backend = make_backend(espeak_voice(lang), tie=self._convert)

    def _phonemize(self, text: str, separator: Separator) -> str:
        result = self._backend.phonemize([text], separator=separator, strip=True)
        return result[0] if result else ""

    def word_phonemes(self, words: list[str]) -> list[str]:
        """Phonemes of each text word, in context where possible.

        espeak may read one text word as several ("2500" → "dos mil quinientos"). Then each word is also
        read alone, only to learn how many espeak words it makes, and the in-context reading is grouped
        by those counts; only if they do not add up are the stand-alone readings used (losing context).
        """
        sep = Separator(phone="", word=_WORD_SEP, syllable="")
        joined = self._phonemize(" ".join(words), sep)
        parts = [p.strip() for p in joined.split(_WORD_SEP)]
        if len(parts) == len(words):
            return parts
        alone = [[p.strip() for p in self._phonemize(word, sep).split(_WORD_SEP)] for word in words]
        if sum(len(pieces) for pieces in alone) == len(parts):
            grouped: list[str] = []
            for pieces in alone:
                grouped.append(" ".join(parts[: len(pieces)]))
                parts = parts[len(pieces) :]
            return grouped
        log.debug("espeak word count mismatch in %r; phonemizing word by word", " ".join(words))
        return [" ".join(pieces) for pieces in alone]

    def __call__(self, text: str) -> list[PhonemeWord]:
        words = _DASHES.sub(r" \1 ", ascii_punctuation(plain_numbers(text, self.lang))).split()
        return self.phonemize_words(words, words)

    def phonemize_words(self, texts: list[str], spoken: list[str]) -> list[PhonemeWord]:
        """Words labelled ``texts`` whose pronunciation is that of ``spoken`` (same length)."""
        if not spoken:
            return []
        out: list[PhonemeWord] = []
        for text, word, phonemes in zip(texts, spoken, self.word_phonemes(spoken), strict=True):
            out.extend(split_punctuation(text if text.strip() else word, phonemes, self._convert))
        return attach_punctuation(out)
