"""Japanese G2P: kanji → kana with pykakasi (when installed), then espeak-ng.

misaki's own Japanese G2P needs pyopenjtalk/unidic dictionaries that are downloaded at run
time, so this path reads kanji with pykakasi's bundled dictionary and lets espeak pronounce
the kana. Without pykakasi, kanji fall through to espeak, which spells them poorly.
"""

from __future__ import annotations

import logging
from typing import Any

from voxserve.text.g2p_espeak import EspeakG2P, ascii_punctuation
from voxserve.text.languages import Alphabet
from voxserve.types import PhonemeWord

log = logging.getLogger(__name__)

# Particles written with one kana and read with another.
_PARTICLES = {"は": "わ", "へ": "え"}
_GREETINGS = {"こんにちは": "こんにちわ", "こんばんは": "こんばんわ"}


def _make_kakasi() -> Any | None:
    try:
        import pykakasi
    except ImportError:
        log.warning("pykakasi is not installed: Japanese kanji will be read poorly by espeak")
        return None
    return pykakasi.kakasi()


class JapaneseG2P:
    """Not thread-safe (the Frontend holds a lock around calls)."""

    def __init__(self, alphabet: Alphabet) -> None:
        self._espeak = EspeakG2P("ja", alphabet)
        self._kakasi = _make_kakasi()

    def readings(self, text: str) -> list[tuple[str, str]]:
        """(written, kana reading) per word; punctuation as ASCII marks."""
        if self._kakasi is None:
            return [(word, word) for word in ascii_punctuation(text).split()]
        pairs: list[tuple[str, str]] = []
        previous_was_word = False
        for item in self._kakasi.convert(text):
            orig, kana = str(item["orig"]).strip(), str(item["hira"]).strip()
            if not orig:
                continue
            kana = _GREETINGS.get(kana, kana)
            if previous_was_word and orig in _PARTICLES:
                kana = _PARTICLES[orig]
            for part_orig, part_kana in zip(orig.split(), kana.split(), strict=False):
                spoken = ascii_punctuation(part_kana).strip() or part_kana
                pairs.append((part_orig, spoken.replace(" ", "")))
            previous_was_word = any(ch.isalnum() for ch in orig)
        return pairs

    def __call__(self, text: str) -> list[PhonemeWord]:
        pairs = self.readings(text)
        return self._espeak.phonemize_words([p[0] for p in pairs], [p[1] for p in pairs])
