"""The voice catalogue: what each voice id means (engine, language, gender)."""

from __future__ import annotations

import math

from voxserve.engines.base import Alphabet
from voxserve.types import VoiceInfo

KOKORO_ALPHABET: Alphabet = "misaki"  # Kokoro's phonemes (its voices' VoiceInfo and the engine say it)

# Kokoro voice ids start with a language letter and a gender letter: "af_heart" = American English, female.
KOKORO_LANG_BY_PREFIX: dict[str, str] = {
    "a": "en-us",
    "b": "en-gb",
    "e": "es",
    "f": "fr",
    "h": "hi",
    "i": "it",
    "j": "ja",
    "p": "pt-br",
    "z": "zh",
}
_GENDER = {"f": "female", "m": "male"}


def kokoro_voice_info(voice_id: str, sample_rate: int) -> VoiceInfo | None:
    """Describe a Kokoro voice from its id, or ``None`` if the id doesn't follow the naming scheme."""
    if len(voice_id) < 4 or voice_id[2] != "_":
        return None
    lang = KOKORO_LANG_BY_PREFIX.get(voice_id[0])
    gender = _GENDER.get(voice_id[1])
    if lang is None or gender is None:
        return None
    pretty = voice_id[3:].replace("_", " ").title()
    return VoiceInfo(voice_id, "kokoro", lang, gender, sample_rate, pretty, alphabet=KOKORO_ALPHABET)


def parse_blend(spec: str) -> list[tuple[str, float]]:
    """Parse ``"af_heart:0.7+af_bella:0.3"`` into normalized ``[(voice, weight), ...]``.

    A voice without a weight counts 1. Weights must be positive; they are normalized to sum to 1.
    Raises ``ValueError`` on malformed specs (the engine turns it into a user-facing error).
    """
    parts: list[tuple[str, float]] = []
    for raw in spec.split("+"):
        item = raw.strip()
        if not item:
            raise ValueError(f"empty voice in blend {spec!r}")
        name, _, weight_text = item.partition(":")
        try:
            weight = float(weight_text) if weight_text else 1.0
        except ValueError:
            raise ValueError(f"weight {weight_text!r} of voice {name!r} is not a number") from None
        if not (weight > 0 and math.isfinite(weight)):
            raise ValueError(f"weight {weight_text!r} of voice {name!r} must be a finite positive number")
        parts.append((name.strip(), weight))
    total = sum(weight for _, weight in parts)
    if not math.isfinite(total):
        raise ValueError("weights too large to add up; use weights such as 0.7 and 0.3")
    return [(name, weight / total) for name, weight in parts]


def blend_lead(spec: str) -> str:
    """The first voice of a voice or blend spec (``"af_heart:0.7+af_bella:0.3"`` → ``af_heart``): the one
    whose engine, language and sample rate a blend takes. Never raises; :func:`parse_blend` checks the rest."""
    return spec.split("+")[0].split(":")[0].strip()
