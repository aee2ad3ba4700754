"""Mandarin G2P for Kokoro v1.0: jieba words → pinyin → IPA with tone arrows (misaki's legacy mode).

English words inside Chinese text are phonemized by the English G2P instead of being dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import jieba
from misaki.zh import ZHG2P

from voxserve.text.g2p_espeak import ascii_punctuation, attach_punctuation
from voxserve.text.normalize_zh import HAN_CLASS, ChineseNormalizer
from voxserve.text.packed import PackedMap
from voxserve.text.vocab_map import clean_kokoro
from voxserve.types import PhonemeWord

log = logging.getLogger(__name__)

EnglishCallable = Callable[[str], list[PhonemeWord]]

_RUNS = re.compile(
    rf"(?P<han>[{HAN_CLASS}]+)|(?P<latin>[A-Za-z0-9][A-Za-z0-9'’.\- ]*[A-Za-z0-9]|[A-Za-z0-9])|(?P<other>\S)"
)
_PUNCT_KEEP = set(',.;:!?—…"“”()')
_NON_SYLLABIC = "\u032f"


class ChineseG2P:
    """Normalizes and phonemizes Mandarin (simplified or traditional). Not thread-safe."""

    def __init__(self, english: EnglishCallable | None = None, cache_dir: Path | None = None) -> None:
        self._normalize = ChineseNormalizer()
        self._english = english
        self._tokenizer = jieba.Tokenizer()
        if cache_dir is not None:
            cache_dir.mkdir(parents=True, exist_ok=True)
            self._tokenizer.tmp_dir = str(cache_dir)
        jieba.setLogLevel(logging.WARNING)
        self._tokenizer.initialize()
        # jieba only reads its prefix dictionary once built (voxserve.text.packed)
        self._tokenizer.FREQ = PackedMap(self._tokenizer.FREQ)

    def set_english(self, english: EnglishCallable) -> None:
        self._english = english

    @staticmethod
    def word_phonemes(word: str) -> str:
        return clean_kokoro(ZHG2P.word2ipa(word).replace(_NON_SYLLABIC, ""))

    def __call__(self, text: str) -> list[PhonemeWord]:
        text = self._normalize(text)
        words: list[PhonemeWord] = []
        for match in _RUNS.finditer(text):
            if match.group("han"):
                for word in self._tokenizer.lcut(match.group("han"), cut_all=False):
                    phonemes = self.word_phonemes(word)
                    if phonemes:
                        words.append(PhonemeWord(word, phonemes))
            elif match.group("latin"):
                words.extend(self._latin(match.group("latin")))
            else:
                mark = ascii_punctuation(match.group("other")).strip()
                if mark and all(ch in _PUNCT_KEEP for ch in mark):
                    opening = mark in "“("
                    words.append(PhonemeWord(match.group("other"), mark, space_after=not opening))
        return attach_punctuation(words)

    def _latin(self, run: str) -> list[PhonemeWord]:
        if self._english is None:
            log.info("no English G2P for %r inside Chinese text; skipped", run)
            return []
        words = [w for w in self._english(run) if w.phonemes]
        if words and not words[-1].space_after:
            words[-1] = replace(words[-1], space_after=True)
        return words
