"""Language codes the text frontend supports, and how voices map onto them."""

from __future__ import annotations

from typing import Literal

from voxserve.engines.voices import KOKORO_LANG_BY_PREFIX
from voxserve.errors import UnsupportedLanguage

Alphabet = Literal["misaki", "espeak"]

SUPPORTED_LANGS: tuple[str, ...] = ("en-us", "en-gb", "zh", "ja", "fr", "es", "it", "pt-br", "hi", "ko")

# espeak-ng voice name for each language.
ESPEAK_VOICE: dict[str, str] = {
    "en-us": "en-us",
    "en-gb": "en-gb",
    "zh": "cmn",
    "ja": "ja",
    "fr": "fr-fr",
    "es": "es",
    "it": "it",
    "pt-br": "pt-br",
    "hi": "hi",
    "ko": "ko",
}

_ALIASES: dict[str, str] = {
    "en": "en-us",
    "en-us": "en-us",
    "en_us": "en-us",
    "american": "en-us",
    "en-gb": "en-gb",
    "en_gb": "en-gb",
    "en-uk": "en-gb",
    "british": "en-gb",
    "zh": "zh",
    "zh-cn": "zh",
    "zh_cn": "zh",
    "cmn": "zh",
    "mandarin": "zh",
    "ja": "ja",
    "jp": "ja",
    "fr": "fr",
    "fr-fr": "fr",
    "fr_fr": "fr",
    "es": "es",
    "es-es": "es",
    "it": "it",
    "it-it": "it",
    "pt-br": "pt-br",
    "pt_br": "pt-br",
    "pt": "pt-br",
    "hi": "hi",
    "hi-in": "hi",
    "ko": "ko",
    "ko-kr": "ko",
}


# Languages added at run time by voices that bring their own espeak voice (a Piper voice's config):
# canonical code → espeak-ng voice name. Process-wide, as the voices a process serves are; read only
# through the functions below.
_REGISTERED: dict[str, str] = {}


def register_language(code: str, espeak_voice: str) -> str:
    """Make ``code`` (e.g. "de" from a German Piper voice) a language the espeak frontend reads with
    ``espeak_voice``; returns its canonical code (a known language keeps its own)."""
    key = code.strip().lower().replace("_", "-")
    known = _ALIASES.get(key) or _ALIASES.get(key.split("-")[0])
    if known is not None:
        return known
    family = key.split("-")[0]
    _REGISTERED.setdefault(family, espeak_voice)
    return family


def supported_langs() -> tuple[str, ...]:
    return SUPPORTED_LANGS + tuple(sorted(set(_REGISTERED) - set(SUPPORTED_LANGS)))


def espeak_voice(lang: str) -> str:
    """The espeak-ng voice that reads ``lang`` (a canonical code)."""
    return ESPEAK_VOICE.get(lang) or _REGISTERED[lang]


def normalize_lang(lang: str) -> str:
    """Return the canonical code for ``lang`` or raise :class:`UnsupportedLanguage`."""
    key = lang.strip().lower()
    canonical = _ALIASES.get(key) or _ALIASES.get(key.replace("_", "-"))
    if canonical is None:
        family = key.replace("_", "-").split("-")[0]
        if family in _REGISTERED:
            return family
        raise UnsupportedLanguage(f"language {lang!r} is not supported; supported: {', '.join(supported_langs())}")
    return canonical


def lang_for_voice(voice_id: str) -> str:
    """Language a voice speaks: Kokoro ids by prefix (``af_heart``), Piper ids by locale (``en_US-joe-medium``)."""
    head = voice_id.split("-", 1)[0]
    if "_" in head and len(head) == 5 and head[2] == "_" and head[:2].isalpha() and head[3:].isalpha():
        return normalize_lang(head.replace("_", "-"))
    if len(voice_id) >= 2 and voice_id[1] in "fm" and (len(voice_id) == 2 or voice_id[2] == "_"):
        lang = KOKORO_LANG_BY_PREFIX.get(voice_id[0].lower())
        if lang is not None:
            return lang
    raise UnsupportedLanguage(f"cannot tell the language of voice {voice_id!r}; pass a language explicitly")
