"""Japanese G2P: kanji → kana with pykakasi (when installed), then espeak-ng.

misaki's own Japanese G2P needs pyopenjtalk/unidic dictionaries that are downloaded at run
time, so this path reads kanji with pykakasi's bundled dictionary and lets espeak pronounce
the kana. Without pykakasi, kanji fall through to espeak, which spells them poorly.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from voxserve.text.g2p_espeak import EspeakG2P, ascii_punctuation
from voxserve.text.languages import Alphabet
from voxserve.text.numbers_ja import NUMBER_RE, match_kana
from voxserve.types import PhonemeWord

log = logging.getLogger(__name__)

# Particles written with one kana and read with another.
_PARTICLES = {"は": "わ", "へ": "え"}
_GREETINGS = {"こんにちは": "こんにちわ", "こんばんは": "こんばんわ"}
# 今日は / 今晩は are the greetings only when they stand alone; pykakasi always reads 今日は as
# こんにちは, so when a word follows ("今日はいい天気") they are read here as 今日 + the particle は.
_TODAY_WA = {"今日": "きょう", "今晩": "こんばん"}
# Spans read here rather than by pykakasi: numbers (with counters) and 今日は/今晩は before a word.
_FIXED = re.compile(rf"(?P<today>今日|今晩)は(?=[^\W_])|{NUMBER_RE.pattern}")
_ASCII_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")
# pykakasi attaches a particle は to the word before it ("これは", "彼は"); words that really end
# in the sound "ha" are the exceptions: はは/ちちはは, いろは and laughter (あはは, わはは).
_NOT_PARTICLE_HA = re.compile(r"(?:[あうえおわが]?は)+|(?:ちち)?はは|いろは")


def _make_kakasi() -> Any | None:
    try:
        import pykakasi
    except ImportError:
        log.warning("pykakasi is not installed: Japanese kanji will be read poorly by espeak")
        return None
    return pykakasi.kakasi()


def _ends_with_particle_ha(orig: str, kana: str) -> bool:
    return len(orig) > 1 and orig.endswith("は") and kana.endswith("は") and _NOT_PARTICLE_HA.fullmatch(orig) is None


class JapaneseG2P:
    """Not thread-safe (the Frontend holds a lock around calls)."""

    def __init__(self, alphabet: Alphabet) -> None:
        self._espeak = EspeakG2P("ja", alphabet)
        self._kakasi = _make_kakasi()
        self._previous_was_word = False

    def readings(self, text: str) -> list[tuple[str, str]]:
        """(written, kana reading) per word; punctuation as ASCII marks."""
        if self._kakasi is None:
            return [(word, word) for word in ascii_punctuation(text).split()]
        pairs: list[tuple[str, str]] = []
        self._previous_was_word = False
        # Full-width digits become ASCII only for matching: same length, so spans stay aligned.
        digits = text.translate(_ASCII_DIGITS)
        start = 0
        for match in _FIXED.finditer(digits):
            pairs += self._kakasi_readings(text[start : match.start()])
            if match.group("today"):
                pairs += [(match.group("today"), _TODAY_WA[match.group("today")]), ("は", "わ")]
            else:
                after_month = digits[: match.start()].endswith("月")
                pairs.append((text[match.start() : match.end()], match_kana(match, after_month=after_month)))
            self._previous_was_word = True
            start = match.end()
        return pairs + self._kakasi_readings(text[start:])

    def _kakasi_readings(self, text: str) -> list[tuple[str, str]]:
        assert self._kakasi is not None
        pairs: list[tuple[str, str]] = []
        for item in self._kakasi.convert(text) if text else []:
            orig, kana = str(item["orig"]).strip(), str(item["hira"]).strip()
            if not orig:
                continue
            kana = _GREETINGS.get(kana, kana)
            if self._previous_was_word and orig in _PARTICLES:
                kana = _PARTICLES[orig]
            elif _ends_with_particle_ha(orig, kana):
                kana = kana[:-1] + "わ"
            for part_orig, part_kana in zip(orig.split(), kana.split(), strict=False):
                spoken = ascii_punctuation(part_kana).strip() or part_kana
                pairs.append((part_orig, spoken.replace(" ", "")))
            self._previous_was_word = any(ch.isalnum() for ch in orig)
        return pairs

    def __call__(self, text: str) -> list[PhonemeWord]:
        pairs = self.readings(text)
        return self._espeak.phonemize_words([p[0] for p in pairs], [p[1] for p in pairs])
