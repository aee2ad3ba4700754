"""Phoneme alphabets: which symbols each model knows, and mapping espeak IPA into Kokoro's vocabulary."""

from __future__ import annotations

import logging
import re
import unicodedata

from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.text.languages import Alphabet

log = logging.getLogger(__name__)

KOKORO_SYMBOLS: frozenset[str] = frozenset(KOKORO_VOCAB)

# The symbol inventory of Piper's espeak phoneme_id_map (shared by its espeak-based voices),
# less the three control symbols "^" (start), "$" (end) and "_" (pad) that only the engine adds.
ESPEAK_SYMBOLS: frozenset[str] = frozenset(
    " !\"#'(),-.0123456789:;?abcdefhijklmnopqrstuvwxyzæçðøħŋœǀǁǂǃɐɑɒɓɔɕɖɗɘəɚɛɜɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺ"
    "ɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʰʲˈˌːˑ˞ˤ\u0327\u0329\u032a\u032f\u0303βεθχᵻ↓ⱱ"
)


def alphabet_symbols(alphabet: Alphabet) -> frozenset[str]:
    return KOKORO_SYMBOLS if alphabet == "misaki" else ESPEAK_SYMBOLS


def unknown_symbols(phonemes: str, alphabet: Alphabet) -> set[str]:
    known = alphabet_symbols(alphabet)
    return {ch for ch in phonemes if ch not in known}


# espeak IPA with "^" tie bars → Kokoro's one-letter diphthongs and affricates.
_TIED = {
    "a^ɪ": "I",
    "a^ʊ": "W",
    "e^ɪ": "A",
    "o^ʊ": "O",
    "ə^ʊ": "Q",
    "ɔ^ɪ": "Y",
    "d^ʒ": "ʤ",
    "t^ʃ": "ʧ",
    "t^s": "ʦ",
    "d^z": "ʣ",
    "t^ɕ": "ʨ",
    "d^ʑ": "ʥ",
    "s^s": "S",
}
_TIED_RE = re.compile("|".join(re.escape(k) for k in sorted(_TIED, key=len, reverse=True)))

# Single symbols outside the vocabulary → nearest symbol(s) inside it ("" drops).
_SINGLE = {
    "^": "",
    "-": "",
    "‿": "",
    "'": "",
    "¡": "",
    "¿": "",
    "«": "“",
    "»": "”",
    "[": "(",
    "]": ")",
    "{": "(",
    "}": ")",
    "g": "ɡ",
    "ä": "a",
    "ɫ": "l",
    "ɬ": "l",
    "ɭ": "l",
    "ʟ": "l",
    "ʀ": "ʁ",
    "ɱ": "m",
    "ʍ": "w",
    "ɦ": "h",
    "ħ": "h",
    "ʉ": "u",
    "ɵ": "o",
    "ɘ": "ə",
    "ɞ": "ɜ",
    "ɶ": "œ",
    "ʏ": "y",
    "ʑ": "ʒ",
    "ʐ": "ʒ",
    "ɧ": "ʃ",
    "ɺ": "ɾ",
    "ɢ": "ɡ",
    "ɠ": "ɡ",
    "ɓ": "b",
    "ɗ": "d",
    "ʄ": "ɟ",
    "ʡ": "ʔ",
    "ʕ": "ʔ",
    "ʢ": "ʔ",
    "ʱ": "ʰ",
    "ε": "ɛ",
    "ⱱ": "v",
    "ᵊ": "ᵊ",
    "ˑ": "",
    "ˤ": "",
    "˞": "ɹ",
    "–": "—",
    "\u0329": "",  # syllabic mark
    "\u032f": "",  # non-syllabic
    "\u032a": "",  # dental
    "\u031e": "",  # lowered
    "\u031d": "",  # raised
    "\u0325": "",  # voiceless
    "\u0330": "",  # creaky
    "\u0361": "",  # tie bar
    "\u035c": "",  # tie bar below
}
_warned: set[str] = set()


def _map_char(ch: str) -> str:
    if ch in KOKORO_SYMBOLS:
        return ch
    if ch in _SINGLE:
        return _SINGLE[ch]
    decomposed = unicodedata.normalize("NFD", ch)
    if len(decomposed) > 1:
        return "".join(_map_char(part) for part in decomposed)
    if ch.isdigit() or ch.isspace():
        return " " if ch.isspace() else ""
    if ch not in _warned:
        _warned.add(ch)
        log.warning("dropping phoneme symbol %r (U+%04X) that Kokoro has no id for", ch, ord(ch))
    return ""


def espeak_to_kokoro(phonemes: str) -> str:
    """Rewrite espeak-ng IPA (tie marks written as "^") into symbols of ``KOKORO_VOCAB`` only."""
    phonemes = _TIED_RE.sub(lambda m: _TIED[m.group(0)], phonemes)
    return "".join(_map_char(ch) for ch in phonemes)


def clean_kokoro(phonemes: str) -> str:
    """Drop (and log once) anything outside Kokoro's vocabulary, mapping near misses first."""
    if all(ch in KOKORO_SYMBOLS for ch in phonemes):
        return phonemes
    return "".join(_map_char(ch) for ch in phonemes.replace("❓", ""))


_ESPEAK_PUNCT = {
    "—": ",", "–": ",", "…": "...", "“": '"', "”": '"', "«": '"', "»": '"', "¡": "", "¿": "",
    "[": "(", "]": ")", "{": "(", "}": ")",
}  # fmt: skip


def clean_espeak(phonemes: str) -> str:
    """Map punctuation Piper's espeak map lacks onto what it has; drop (and log once) other strangers."""
    for old, new in _ESPEAK_PUNCT.items():
        phonemes = phonemes.replace(old, new)
    out = []
    for ch in phonemes:
        if ch in ESPEAK_SYMBOLS:
            out.append(ch)
            continue
        parts = unicodedata.normalize("NFD", ch)
        if len(parts) > 1 and all(p in ESPEAK_SYMBOLS for p in parts):
            out.append(parts)
        elif ch not in _warned:
            _warned.add(ch)
            log.warning("dropping phoneme symbol %r (U+%04X) outside the espeak alphabet", ch, ord(ch))
    return "".join(out)
