"""Language codes the text frontend supports, and how voices map onto them."""

from __future__ import annotations

from typing import Literal

from voxserve.errors import UnsupportedLanguage

Alphabet = Literal["misaki", "espeak"]

SUPPORTED_LANGS: tuple[str, ...] = ("en-us", "en-gb", "zh", "ja", "fr", "es", "it", "pt-br", "hi", "ko")

# Kokoro voice ids start with a letter naming their language ("af_heart" → American English).
KOKORO_PREFIX_LANG: dict[str, str] = {
    "a": "en-us",
    "b": "en-gb",
    "z": "zh",
    "j": "ja",
    "f": "fr",
    "e": "es",
    "i": "it",
    "p": "pt-br",
    "h": "hi",
}

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


def normalize_lang(lang: str) -> str:
    """Return the canonical code for ``lang`` or raise :class:`UnsupportedLanguage`."""
    key = lang.strip().lower()
    canonical = _ALIASES.get(key) or _ALIASES.get(key.replace("_", "-"))
    if canonical is None:
        raise UnsupportedLanguage(f"language {lang!r} is not supported; supported: {', '.join(SUPPORTED_LANGS)}")
    return canonical


def lang_for_voice(voice_id: str) -> str:
    """Language a voice speaks: Kokoro ids by prefix (``af_heart``), Piper ids by locale (``en_US-joe-medium``)."""
    head = voice_id.split("-", 1)[0]
    if "_" in head and len(head) == 5 and head[2] == "_" and head[:2].isalpha() and head[3:].isalpha():
        return normalize_lang(head.replace("_", "-"))
    if len(voice_id) >= 2 and voice_id[1] in "fm" and (len(voice_id) == 2 or voice_id[2] == "_"):
        lang = KOKORO_PREFIX_LANG.get(voice_id[0].lower())
        if lang is not None:
            return lang
    raise UnsupportedLanguage(f"cannot tell the language of voice {voice_id!r}; pass a language explicitly")
