"""Writing systems in a text: which language they suggest, and which ones a language's reader covers.

A voice's text frontend reads only some scripts: an English voice reads Latin letters, a Chinese
one Han and Latin (English words inside Chinese go to the English G2P), a Japanese one Han, kana
and Latin. Letters of any other script would be spelled out by espeak letter by letter ("Arabic
mim, Arabic ra…") or dropped, so a text holding them must go to a voice of that language or be
refused with a clear error (:func:`check_readable`).
"""

from __future__ import annotations

import unicodedata
from collections import Counter

from voxserve.errors import UnsupportedLanguage

# The first word of a letter's Unicode name → its script.
_NAME_SCRIPT = {
    "CJK": "Han",
    "IDEOGRAPHIC": "Han",  # 々
    "HIRAGANA": "Kana",
    "KATAKANA": "Kana",
    "KATAKANA-HIRAGANA": "Kana",  # ー
    "HALFWIDTH": "",  # resolved by the second word (HALFWIDTH KATAKANA / HANGUL)
    "FULLWIDTH": "",
    "HANGUL": "Hangul",
    "LATIN": "Latin",
    "CYRILLIC": "Cyrillic",
    "ARABIC": "Arabic",
    "HEBREW": "Hebrew",
    "GREEK": "Greek",
    "DEVANAGARI": "Devanagari",
    "THAI": "Thai",
    "BENGALI": "Bengali",
    "TAMIL": "Tamil",
    "ARMENIAN": "Armenian",
    "GEORGIAN": "Georgian",
}

# The language a script suggests, and its name for messages.
SCRIPT_LANGUAGE: dict[str, str] = {
    "Han": "zh",
    "Kana": "ja",
    "Hangul": "ko",
    "Cyrillic": "ru",
    "Arabic": "ar",
    "Hebrew": "he",
    "Greek": "el",
    "Devanagari": "hi",
    "Thai": "th",
    "Bengali": "bn",
    "Tamil": "ta",
    "Armenian": "hy",
    "Georgian": "ka",
}
LANGUAGE_NAMES: dict[str, str] = {
    "en-us": "English",
    "en-gb": "English",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt-br": "Portuguese",
    "hi": "Hindi",
    "ru": "Russian",
    "ar": "Arabic",
    "he": "Hebrew",
    "el": "Greek",
    "th": "Thai",
    "bn": "Bengali",
    "ta": "Tamil",
    "hy": "Armenian",
    "ka": "Georgian",
    "de": "German",
    "nl": "Dutch",
}

# Scripts each language's frontend reads; any language reads Latin (names, brands, loanwords).
_READS: dict[str, frozenset[str]] = {
    "zh": frozenset({"Han", "Latin"}),
    "ja": frozenset({"Han", "Kana", "Latin"}),
    "ko": frozenset({"Hangul", "Latin"}),
    "hi": frozenset({"Devanagari", "Latin"}),
    "ru": frozenset({"Cyrillic", "Latin"}),
    "ar": frozenset({"Arabic", "Latin"}),
    "el": frozenset({"Greek", "Latin"}),
    "he": frozenset({"Hebrew", "Latin"}),
}
_LATIN_ONLY = frozenset({"Latin"})


def script_of(ch: str) -> str | None:
    """The script of a letter ("Han", "Kana", "Latin", …), or None for anything that is not a letter."""
    if unicodedata.category(ch)[0] != "L":
        return None
    words = unicodedata.name(ch, "").split()
    if not words:
        return "Other"
    head = words[0]
    if _NAME_SCRIPT.get(head) == "" and len(words) > 1:
        head = words[1]
    return _NAME_SCRIPT.get(head) or head.title()


def scripts(text: str) -> Counter[str]:
    """How many letters of each script that suggests a language ``text`` holds. A lone Greek letter
    is a symbol (α, π, Ω), not Greek text, so Greek counts only in runs of two letters or more."""
    counts: Counter[str] = Counter()
    previous: str | None = None
    run = 0
    for ch in text + " ":
        script = script_of(ch)
        if script == previous:
            run += 1
            continue
        if (
            previous is not None
            and (previous == "Latin" or previous in SCRIPT_LANGUAGE)
            and (previous != "Greek" or run > 1)
        ):
            counts[previous] += run
        previous, run = script, 1
    return counts


def language_name(lang: str) -> str:
    return LANGUAGE_NAMES.get(lang, lang)


def reads(lang: str) -> frozenset[str]:
    """Scripts the frontend of ``lang`` reads."""
    return _READS.get(lang.split("-")[0] if lang not in _READS else lang, _LATIN_ONLY)


def text_language(text: str, fallback: str) -> str:
    """The language ``text`` is written in, as far as its letters tell: any kana → Japanese; else the
    non-Latin script with the most letters (Han → Chinese, unless ``fallback`` is Japanese); else
    ``fallback`` (Latin letters do not tell English from French)."""
    counts = scripts(text)
    if counts.get("Kana"):
        return "ja"
    foreign = [(n, s) for s, n in counts.items() if s != "Latin"]
    if not foreign:
        return fallback
    script = max(foreign)[1]
    if script == "Han" and fallback == "ja":
        return "ja"
    return SCRIPT_LANGUAGE[script]


def unreadable(text: str, lang: str) -> list[str]:
    """Scripts in ``text`` that the frontend of ``lang`` cannot read, most letters first."""
    covered = reads(lang)
    return [script for script, _ in scripts(text).most_common() if script not in covered]


def describe(text: str, missing: list[str], lang: str) -> str:
    """ "Korean (Hangul script)", "Russian (Cyrillic script) and Chinese (Han script)" for messages: the
    languages of the scripts not read (Han with kana is Japanese)."""
    target = text_language(text, lang)
    groups: dict[str, list[str]] = {}
    for script in missing:
        language = target if target == "ja" and script in ("Han", "Kana") else SCRIPT_LANGUAGE.get(script, script)
        groups.setdefault(language, []).append(script)
    return " and ".join(f"{language_name(name)} ({', '.join(scripts)} script)" for name, scripts in groups.items())


def check_readable(text: str, lang: str) -> None:
    """Raise :class:`UnsupportedLanguage` when ``text`` has letters the ``lang`` frontend would spell
    out or drop; the message names them and says how to have them spoken."""
    missing = unreadable(text, lang)
    if missing:
        raise UnsupportedLanguage(
            f"the text contains {describe(text, missing, lang)}, which the {language_name(lang)} ({lang}) text "
            f"frontend cannot read; use a voice that speaks {language_name(text_language(text, lang))}"
        )
