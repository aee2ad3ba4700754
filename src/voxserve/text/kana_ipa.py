"""Katakana readings → the phoneme alphabet Kokoro v1.0 learned Japanese in.

Kokoro's Japanese voices were trained on a narrow IPA transcription of each word's reading:
ウ is unrounded ɯ (ɨ after ス, ツ, ズ and in palatal syllables), ら-row ɾ, i-column consonants
palatalized (キ kʲi, シ ɕi, チ ʨi, ニ ɲi, ヒ çi, ミ mʲi), ザ-row affricates ʣ, ワ βa, long vowels
ː, the moraic obstruent ッ ʔ and ン assimilated to the consonant after it (m, ŋ, ɲ, n; else ɴ).
No pitch-accent marks: the alphabet has none. The table is built row by row from those rules.
"""

from __future__ import annotations

_VOWELS = ("a", "i", "ɯ", "e", "o")
# Onset of each gojūon row for the columns a, i, u, e, o.
_ROWS: dict[str, tuple[str, str, str, str, str]] = {
    "アイウエオ": ("", "", "", "", ""),
    "カキクケコ": ("k", "kʲ", "k", "k", "k"),
    "ガギグゲゴ": ("ɡ", "ɡʲ", "ɡ", "ɡ", "ɡ"),
    "サシスセソ": ("s", "ɕ", "s", "s", "s"),
    "ザジズゼゾ": ("ʣ", "ʥ", "z", "ʣ", "ʣ"),
    "タチツテト": ("t", "ʨ", "ʦ", "t", "t"),
    "ダヂヅデド": ("d", "ʥ", "z", "d", "d"),
    "ナニヌネノ": ("n", "ɲ", "n", "n", "n"),
    "ハヒフヘホ": ("h", "ç", "ɸ", "h", "h"),
    "バビブベボ": ("b", "bʲ", "b", "b", "b"),
    "パピプペポ": ("p", "pʲ", "p", "p", "p"),
    "マミムメモ": ("m", "mʲ", "m", "m", "m"),
    "ラリルレロ": ("ɾ", "ɾʲ", "ɾ", "ɾ", "ɾ"),
}
# Onsets whose u is central (ɨ) rather than back (ɯ).
_CENTRAL_U = {"s", "ʦ", "z"}


def _syllable(onset: str, vowel: str) -> str:
    if vowel == "ɯ" and (onset in _CENTRAL_U or onset.endswith("ʲ") or onset in {"ɕ", "ʨ", "ʥ", "ɲ", "ç"}):
        return onset + "ɨ"
    return onset + vowel


def _build_single() -> dict[str, str]:
    table: dict[str, str] = {}
    for kana, onsets in _ROWS.items():
        for ch, onset, vowel in zip(kana, onsets, _VOWELS, strict=True):
            table[ch] = _syllable(onset, vowel)
    table.update({"ヤ": "ja", "ユ": "jɯ", "ヨ": "jo", "ワ": "βa", "ヮ": "βa", "ヰ": "i", "ヱ": "e", "ヲ": "o"})
    table.update({"ヴ": "vɯ", "ヵ": "ka", "ヶ": "ke", "ヷ": "va", "ヸ": "vʲi", "ヹ": "ve", "ヺ": "vo"})
    # Small vowels and glides standing alone read as their full-size kana.
    table.update({"ァ": "a", "ィ": "i", "ゥ": "ɯ", "ェ": "e", "ォ": "o", "ャ": "ja", "ュ": "jɯ", "ョ": "jo"})
    return table


SINGLE = _build_single()
_SMALL_GLIDE = {"ャ": "a", "ュ": "ɯ", "ョ": "o"}
_SMALL_VOWEL = {"ァ": "a", "ィ": "i", "ゥ": "ɯ", "ェ": "e", "ォ": "o"}
# The consonant a u-column kana lends to a following small vowel (クァ kᵝa, フィ ɸʲi, ウェ βe).
_U_ONSET = {"ク": "kᵝ", "グ": "ɡᵝ", "ウ": "β", "フ": "ɸ", "ツ": "ʦ", "ヴ": "v", "ト": "t", "ド": "d"}
# Onsets that palatalize before a small ィ (ティ tʲi, フィ ɸʲi); the labialized ones do not.
_PALATALIZE_BEFORE_I = {"ɸ", "ʦ", "v", "t", "d"}


def _onset(kana: str) -> str:
    """The consonant part of a single kana's phonemes (キ → kʲ, シ → ɕ, ア → "")."""
    return SINGLE.get(kana, "").rstrip("aiɯɨeo")


def _digraph(first: str, small: str) -> str | None:
    """Phonemes of a kana followed by a small kana, or None when they do not combine."""
    if small in _SMALL_GLIDE:
        if first in "テデ":  # テュ tʲɨ, デュ dʲɨ
            return _syllable(SINGLE[first][0] + "ʲ", "ɯ")
        if first == "フ":
            return _syllable("ɸʲ", _SMALL_GLIDE[small])
        if first == "ヴ":
            return _syllable("bʲ", _SMALL_GLIDE[small])
        if SINGLE.get(first, "").endswith("i") and _onset(first):
            return _syllable(_onset(first), _SMALL_GLIDE[small])
        return None
    if small not in _SMALL_VOWEL:
        return None
    vowel = _SMALL_VOWEL[small]
    if first == "イ" and small == "ェ":
        return "je"
    if first in "トド" and small == "ゥ":
        return SINGLE[first][0] + "ɯ"
    if first in "テデ" and small == "ィ":
        return SINGLE[first][0] + "ʲi"
    onset = _U_ONSET.get(first)
    if onset is None and SINGLE.get(first, "").endswith("i") and _onset(first):
        onset = _onset(first)  # シェ ɕe, チェ ʨe, キェ kʲe
    if onset is None:
        return None
    if vowel == "i" and onset in _PALATALIZE_BEFORE_I:
        onset += "ʲ"
    return onset + vowel


def _moraic_nasal(following: str) -> str:
    """ン before the phonemes ``following``: assimilated to their place of articulation."""
    if following[:1] in ("m", "p", "b"):
        return "m"
    if following[:1] in ("k", "ɡ"):
        return "ŋ"
    if following[:1] in ("ɲ", "ʨ", "ʥ"):
        return "ɲ"
    if following[:1] in ("n", "t", "d", "ɾ", "z"):
        return "n"
    return "ɴ"


def _kana_units(reading: str) -> list[str]:
    """Split a katakana reading into the phonemes of each mora (ン and ッ left as kana)."""
    units: list[str] = []
    i = 0
    while i < len(reading):
        ch = reading[i]
        pair = _digraph(ch, reading[i + 1]) if i + 1 < len(reading) else None
        if pair is not None:
            units.append(pair)
            i += 2
            continue
        if ch in SINGLE:
            units.append(SINGLE[ch])
        elif ch == "ー":
            units.append("ː")
        elif ch in "ンッ":
            units.append(ch)
        i += 1
    return units


def kana_to_ipa(reading: str) -> str:
    """Phonemes of a katakana reading; characters that are not kana are ignored."""
    units = _kana_units(reading)
    out: list[str] = []
    for i, unit in enumerate(units):
        following = units[i + 1] if i + 1 < len(units) else ""
        if unit == "ン":
            out.append(_moraic_nasal(following))
        elif unit == "ッ":
            out.append("ʔ")
        else:
            out.append(unit)
    return "".join(out)


_O_COLUMN = set("おこごそぞとどのほぼぽもよろょ")
_U_COLUMN = set("ゅ") | set("うくぐすずつづぬふぶぷむゆる")
_E_COLUMN = set("えけげせぜてでねへべぺめれ")


def lengthen(kana: str) -> str:
    """Spelled-out long vowels in hiragana as OpenJTalk writes them: きゅう → きゅー, ちょう → ちょー,
    とお → とー, れい → れー (so every reading reaches the model in one form)."""
    out: list[str] = []
    for ch in kana:
        prev = out[-1] if out else ""
        long_o_or_u = (ch == "う" and (prev in _O_COLUMN or prev in _U_COLUMN)) or (ch == "お" and prev in _O_COLUMN)
        long_e = ch == "い" and prev in _E_COLUMN
        out.append("ー" if long_o_or_u or long_e else ch)
    return "".join(out)


def hiragana_to_katakana(text: str) -> str:
    """ぁ..ゖ and ゝゞ → their katakana (the rest unchanged)."""
    return "".join(chr(ord(ch) + 0x60) if "ぁ" <= ch <= "ゖ" or ch in "ゝゞ" else ch for ch in text)


def katakana_to_hiragana(text: str) -> str:
    return "".join(chr(ord(ch) - 0x60) if "ァ" <= ch <= "ヶ" or ch in "ヽヾ" else ch for ch in text)
