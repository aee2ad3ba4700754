"""The text frontend facade: clean → segment → normalize → G2P → PhonemeSegments within a model's limit."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from voxserve.errors import InvalidInput, UnsupportedLanguage
from voxserve.limits import check_input_length
from voxserve.settings import Settings
from voxserve.text.clean import check_numbers, clean_text, is_speakable, strip_controls
from voxserve.text.languages import Alphabet, normalize_lang, supported_langs
from voxserve.text.lexicon import apply_lexicon
from voxserve.text.markup import check_markup, check_phonemes, parse_markup, strip_markup
from voxserve.text.normalize_en import normalize_english
from voxserve.text.normalize_ko import normalize_korean
from voxserve.text.phoneme_split import fit_words, sentence_words
from voxserve.text.scripts import check_readable
from voxserve.text.segment import TextSegment, split_text
from voxserve.types import LexiconEntry, PhonemeSegment, PhonemeWord

log = logging.getLogger(__name__)

KOKORO_MAX_PHONEMES = 510
ALPHABETS: tuple[Alphabet, ...] = ("misaki", "espeak")


def _normalize(text: str, lang: str) -> str:
    """The language's own text normalization before G2P (numbers, abbreviations, units)."""
    if lang.startswith("en"):
        return normalize_english(text)
    if lang == "ko":
        return normalize_korean(text)
    return text


class G2P(Protocol):
    def __call__(self, text: str) -> list[PhonemeWord]: ...


class _Locked:
    """Serializes calls into a G2P object (spaCy, espeak and jieba state are not thread-safe)."""

    def __init__(self, g2p: G2P, lock: threading.Lock) -> None:
        self._g2p = g2p
        self._lock = lock

    def __call__(self, text: str) -> list[PhonemeWord]:
        with self._lock:
            return self._g2p(text)


class Frontend:
    """One per process. G2P objects are built on first use of each (language, alphabet)."""

    def __init__(self, settings: Settings) -> None:
        self.first_segment_words = settings.first_segment_words
        self.max_segment_chars = settings.max_segment_chars
        self.max_input_chars = settings.max_input_chars
        self._jieba_cache = settings.cache_dir / "jieba"
        self._build_lock = threading.Lock()
        self._english_lock = threading.Lock()  # both English G2Ps share one spaCy pipeline
        self._g2ps: dict[tuple[str, Alphabet], _Locked] = {}
        self._nlp: Any = None

    # --- public API ---------------------------------------------------------------------
    def phonemize(
        self, text: str, lang: str, alphabet: Alphabet = "misaki", *, max_phonemes: int = KOKORO_MAX_PHONEMES
    ) -> list[PhonemeSegment]:
        """Phonemize a whole text into segments, the first short, each within ``max_phonemes``."""
        lang, alphabet = self._check(lang, alphabet)
        text = self._clean(text, lang)
        segments: list[PhonemeSegment] = []
        for segment in split_text(text, self.first_segment_words, self.max_segment_chars):
            segments.extend(self.phonemize_segment(segment, lang, alphabet, max_phonemes=max_phonemes))
        if not segments:
            raise InvalidInput("input text has nothing speakable after normalization")
        return segments

    def phonemize_segment(
        self,
        segment: TextSegment | str,
        lang: str,
        alphabet: Alphabet = "misaki",
        *,
        max_phonemes: int = KOKORO_MAX_PHONEMES,
        lexicon: Sequence[LexiconEntry] = (),
    ) -> list[PhonemeSegment]:
        """Phonemize one segment (e.g. from :class:`IncrementalSegmenter`) without re-segmenting it,
        speaking words the ``lexicon`` names as it says (:mod:`.lexicon`).

        Returns more than one PhonemeSegment only when its phonemes exceed ``max_phonemes``;
        returns ``[]`` when nothing in it is speakable (e.g. a lone emoji mid-stream).
        """
        lang, alphabet = self._check(lang, alphabet)
        if isinstance(segment, str):
            segment = TextSegment(segment, "none")
        check_markup(segment.text, alphabet)
        text = clean_text(segment.text)
        if not is_speakable(strip_markup(text)):
            return []
        lexed = apply_lexicon(text, lexicon)
        check_readable(strip_markup(lexed), lang)  # the lexicon's replacements too: never dropped unread
        words = self._words(lexed, lang, alphabet)
        if not any(w.phonemes.strip(',.;:!?—…"“”() ') for w in words):
            return []
        return fit_words(words, strip_markup(text), lang, segment.boundary, max_phonemes)

    def phonemize_phonemes(
        self, phonemes: str, lang: str, alphabet: Alphabet = "misaki", *, max_phonemes: int = KOKORO_MAX_PHONEMES
    ) -> list[PhonemeSegment]:
        """Whole-phoneme input: validate against the alphabet and cut at sentence marks and the limit."""
        lang, alphabet = self._check(lang, alphabet)
        raw = strip_controls(phonemes)
        if not raw.strip():
            raise InvalidInput("input phonemes are empty")
        check_input_length(len(raw), self.max_input_chars)
        checked = check_phonemes(raw, alphabet)
        segments: list[PhonemeSegment] = []
        for words, boundary in sentence_words(checked):
            text = " ".join(w.text for w in words)
            segments.extend(fit_words(words, text, lang, boundary, max_phonemes))
        return segments

    def reading(self, text: str, lang: str, lexicon: Sequence[LexiconEntry] = ()) -> str:
        """The words ``text`` is read as before G2P: the lexicon's replacements, then the language's own
        normalization (numbers, money, abbreviations). Word timings read each of a run of changed tokens
        alone with it, to tell which token each spoken word came from (:mod:`voxserve.stream.alignment`)."""
        lang = normalize_lang(lang)
        spans = parse_markup(apply_lexicon(clean_text(text), lexicon))
        return " ".join(span.text if span.phonemes is not None else _normalize(span.text, lang) for span in spans)

    def warm(self, langs: Iterable[str], alphabet: Alphabet = "misaki") -> None:
        """Build the G2P objects of ``langs`` now: the first use of a cold one would otherwise pay for it."""
        for lang in langs:
            self._g2p(normalize_lang(lang), alphabet)

    # --- internals ------------------------------------------------------------------------
    def _check(self, lang: str, alphabet: str) -> tuple[str, Alphabet]:
        canonical = normalize_lang(lang)
        if alphabet not in ALPHABETS:
            raise InvalidInput(f"unknown phoneme alphabet {alphabet!r}; use one of {', '.join(ALPHABETS)}")
        if canonical not in supported_langs():
            raise UnsupportedLanguage(f"language {lang!r} is not supported; supported: {', '.join(supported_langs())}")
        return canonical, alphabet

    def _clean(self, text: str, lang: str) -> str:
        check_input_length(len(text), self.max_input_chars)
        if not strip_controls(text).strip():
            raise InvalidInput("input text is empty")
        cleaned = clean_text(text)
        if not is_speakable(strip_markup(cleaned)):
            raise InvalidInput("input text has nothing speakable (only symbols, punctuation or emoji)")
        check_readable(strip_markup(cleaned), lang)
        return cleaned

    def _words(self, text: str, lang: str, alphabet: Alphabet) -> list[PhonemeWord]:
        g2p = self._g2p(lang, alphabet)
        words: list[PhonemeWord] = []
        spans = parse_markup(text.replace("\n", " "))
        for i, span in enumerate(spans):
            if span.phonemes is not None:
                words.append(PhonemeWord(span.text, check_phonemes(span.phonemes, alphabet)))
            else:
                check_numbers(span.text)
                plain = _normalize(span.text, lang)
                if plain.strip():
                    words.extend(g2p(plain))
            if words and i + 1 < len(spans):
                # A word separator between spans exactly where the text has one.
                gap = span.text[-1:].isspace() or spans[i + 1].text[:1].isspace()
                words[-1] = replace(words[-1], space_after=gap)
        return words

    def _g2p(self, lang: str, alphabet: Alphabet) -> _Locked:
        key = (lang, alphabet)
        g2p = self._g2ps.get(key)
        if g2p is not None:
            return g2p
        with self._build_lock:
            g2p = self._g2ps.get(key)
            if g2p is None:
                g2p = self._build(lang, alphabet)
                self._g2ps[key] = g2p
            return g2p

    def _build(self, lang: str, alphabet: Alphabet) -> _Locked:
        """Construct a G2P; called with the build lock held."""
        log.info("building %s G2P for %s", alphabet, lang)
        if alphabet == "misaki" and lang in ("en-us", "en-gb"):
            from voxserve.text.g2p_en import EnglishG2P, load_spacy

            if self._nlp is None:
                self._nlp = load_spacy()
            return _Locked(EnglishG2P(british=lang == "en-gb", nlp=self._nlp), self._english_lock)
        if alphabet == "misaki" and lang == "zh":
            from voxserve.text.g2p_zh import ChineseG2P

            english = self._g2ps.get(("en-us", "misaki")) or self._build_english_us()
            return _Locked(ChineseG2P(english=english, cache_dir=self._jieba_cache), threading.Lock())
        if lang == "ja":
            from voxserve.text.g2p_ja import JapaneseG2P

            return _Locked(JapaneseG2P(alphabet), threading.Lock())
        from voxserve.text.g2p_espeak import EspeakG2P

        return _Locked(EspeakG2P(lang, alphabet), threading.Lock())

    def _build_english_us(self) -> _Locked:
        built = self._build("en-us", "misaki")
        self._g2ps[("en-us", "misaki")] = built
        return built
