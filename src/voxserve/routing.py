"""Which voice and language speak a request, from the letters of its text.

A request names a voice, or none, or ``auto``. With no voice or ``auto`` the text's script picks the
language (kana → Japanese, Han → Chinese, Hangul → Korean, …) and the voice is the operator's choice
for that language (``Settings.language_voices``), else the default voice when it speaks it, else the
first installed voice of the language. A named voice keeps the request unless the text holds letters
its language cannot read: then the operator's voice for the text's language takes over when one is
mapped, and otherwise the request is refused with :class:`UnsupportedLanguage`, naming the language
and a voice that reads it (or saying how to add one), never spelled out letter by letter or silently
dropped. Text streamed into an utterance after its voice was chosen is checked the same way
(:meth:`Router.check`) and refused with the same message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from voxserve.engines.voices import blend_lead
from voxserve.errors import UnsupportedLanguage
from voxserve.text.languages import lang_for_voice, normalize_lang
from voxserve.text.scripts import describe, language_name, scripts, text_language, unreadable
from voxserve.types import VoiceInfo

AUTO_VOICE = "auto"

# A Piper voice of the catalog to suggest for languages Kokoro lacks (names in rhasspy/piper-voices).
_PIPER_EXAMPLES = {
    "ko": "a Korean Piper voice",
    "ru": "ru_RU-irina-medium",
    "ar": "ar_JO-kareem-medium",
    "de": "de_DE-thorsten-medium",
    "el": "el_GR-rapunzelina-low",
}


@dataclass(frozen=True)
class Route:
    voice: str
    lang: str
    rerouted: bool = False  # the text's language took the request to another voice than it named


def _canonical(lang: str) -> str:
    try:
        return normalize_lang(lang)
    except UnsupportedLanguage:
        return lang


def how_to_add(lang: str) -> str:
    """The sentence telling an operator how to install a voice for ``lang``."""
    name = language_name(lang)
    example = _PIPER_EXAMPLES.get(lang, f"a {name} Piper voice")
    return (
        f"no {name} voice installed: place {example} (.onnx + .onnx.json) under MODEL_PATH, "
        f"or fetch one with 'voxserve models fetch piper:<voice>'"
    )


class Router:
    """Chooses a (voice, language) per request; built over the voices the runtime has loaded."""

    def __init__(self, voices: Sequence[VoiceInfo], default_voice: str, language_voices: dict[str, str]) -> None:
        self._voices = list(voices)
        self._default = default_voice
        self._mapped = {_canonical(lang): voice for lang, voice in language_voices.items()}

    def voice_for(self, lang: str) -> str | None:
        """The voice that speaks ``lang`` when nobody named one."""
        if lang in self._mapped:
            return self._mapped[lang]
        speakers = [v for v in self._voices if v.lang == lang]
        default = next((v for v in speakers if v.id == self._default), None)
        return (default or speakers[0]).id if speakers else None

    def _voice_lang(self, voice: str) -> str:
        known = next((v for v in self._voices if v.id == voice), None)
        return known.lang if known is not None else lang_for_voice(blend_lead(voice))

    def route(self, text: str, voice: str | None, lang: str | None) -> Route:
        """See the module docstring; ``lang`` is the request's explicit language, if any."""
        requested = normalize_lang(lang) if lang else None
        if voice is None or voice.strip().lower() == AUTO_VOICE:
            default_lang = self._voice_lang(self._default)
            target = requested or text_language(text, default_lang)
            chosen = self.voice_for(target)
            if chosen is None:
                raise UnsupportedLanguage(self._cannot(text, target))
            return Route(chosen, target)
        voice_lang = requested or self._voice_lang(voice)
        missing = unreadable(text, voice_lang)
        if not missing:
            return Route(voice, voice_lang)
        target = text_language(text, voice_lang)
        mapped = self._mapped.get(target)
        if mapped is not None and not unreadable(text, target):
            return Route(mapped, target, rerouted=True)
        raise self._unreadable(text, voice, voice_lang, missing, streamed=False)

    def check(self, text: str, voice: str, lang: str | None) -> None:
        """Raise :class:`UnsupportedLanguage` when ``voice`` speaking ``lang`` (None: its own) cannot read
        ``text``: text streamed into an utterance whose voice is already chosen, so the message's remedy,
        not a reroute."""
        lang = lang or self._voice_lang(voice)
        missing = unreadable(text, lang)
        if missing:
            raise self._unreadable(text, voice, lang, missing, streamed=True)

    def _unreadable(
        self, text: str, voice: str, lang: str, missing: list[str], *, streamed: bool
    ) -> UnsupportedLanguage:
        what = describe(text, missing, lang)
        return UnsupportedLanguage(
            f"voice {voice!r} speaks {language_name(lang)} and cannot read the {what} in the text; "
            f"{self._remedy(text_language(text, lang), streamed=streamed)}"
        )

    def _remedy(self, lang: str, *, streamed: bool) -> str:
        """How to have ``lang`` spoken: the voice to name, and for a whole request 'auto' or the operator's
        map too (a streamed utterance's voice was chosen at its config: only naming another one helps)."""
        chosen = self.voice_for(lang)
        if chosen is None:
            return how_to_add(lang)
        if streamed:
            return f"configure voice {chosen!r} for such text"
        return (
            f"use voice {chosen!r} or 'auto' (or map {lang}={chosen} in VOXSERVE_LANGUAGE_VOICES to "
            f"switch voices for such text)"
        )

    def _cannot(self, text: str, lang: str) -> str:
        missing = unreadable(text, lang) or sorted(s for s in scripts(text) if s != "Latin")
        return f"cannot speak the {describe(text, missing, lang)}: {how_to_add(lang)}"
