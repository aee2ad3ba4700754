"""Mandarin text normalization: numbers, dates, times, units and symbols into Chinese words."""

from __future__ import annotations

import re
import unicodedata

from misaki.zh_normalization import TextNormalizer
from misaki.zh_normalization.num import num2str

HAN_CLASS = r"\u3400-\u4dbf\u4e00-\u9fff"
_HAN_RE = re.compile(f"[{HAN_CLASS}]")
# Latin words are left to the English G2P: misaki's unit rules would rewrite letters inside them.
_LATIN = r"(?<!°)[A-Za-z]+(?:['’\-][A-Za-z]+)*"
# Except a unit right after a number ("5km", "3.5 kg"), which misaki reads as a unit (五千米). Only
# units misaki reads correctly are listed (it reads "mm" as 米米, "g" and "GB" not at all). The
# number must not follow a Latin word, so a model name such as "iPhone 5s" stays English.
_UNITS = ("km/h", "m/s", "km", "kg", "cm", "ml", "m", "h", "s")
_NUMBER_UNIT = (
    r"(?<![A-Za-z0-9.])(?<![A-Za-z] )[0-9]+(?:\.[0-9]+)?\s?(?:"
    + "|".join(re.escape(unit) for unit in _UNITS)
    + r")(?![A-Za-z])"
)
_RUNS = re.compile(f"(?P<unit>{_NUMBER_UNIT})|(?P<latin>{_LATIN})")
# "1,234,567": misaki reads the comma-separated groups as separate numbers, and the same digits
# without commas as a phone number (幺二三四五六七), so grouped numbers are verbalized here.
_GROUPED = r"[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])(?:\.[0-9]+)?"
_GROUPED_RE = re.compile(rf"(?<![0-9.,])(-?)({_GROUPED})")
# misaki keeps the currency sign before the number and the G2P then drops it: "$5.99" → 五点九九.
_CURRENCIES = {"$": "美元", "€": "欧元", "£": "英镑", "¥": "元", "￥": "元"}
_MONEY_RE = re.compile(r"([$€£¥￥])\s?(" + _GROUPED + r"|[0-9]+(?:\.[0-9]+)?)")


def _grouped(match: re.Match[str]) -> str:
    sign = "负" if match.group(1) else ""
    return sign + num2str(match.group(2).replace(",", ""))


def _money(match: re.Match[str]) -> str:
    return num2str(match.group(2).replace(",", "")) + _CURRENCIES[match.group(1)]


def _unit_without_space(match: re.Match[str]) -> str:
    # "5 km" → "5km": misaki would keep the space inside the reading (五 千米).
    return re.sub(r"\s", "", match.group()) if match.group("unit") else match.group()


def split_latin(text: str) -> list[str]:
    """Alternating [Chinese, Latin, Chinese, ...] chunks; numbers with a unit stay in the Chinese ones."""
    parts: list[str] = []
    start = 0
    for match in _RUNS.finditer(text):
        if match.group("latin"):
            parts += [text[start : match.start()], match.group()]
            start = match.end()
    return [*parts, text[start:]]


_OTHER_DIGITS = re.compile(r"(?![0-9])\d")


class ChineseNormalizer:
    """Wraps misaki's ``TextNormalizer`` (a port of PaddleSpeech's rules); one per G2P."""

    def __init__(self) -> None:
        self._normalizer = TextNormalizer()

    def __call__(self, text: str) -> str:
        # misaki's rules match any Unicode digit (\d) but only know 0-9 ("٣" raised KeyError)
        text = _OTHER_DIGITS.sub(lambda m: str(unicodedata.decimal(m.group())), text)
        text = _GROUPED_RE.sub(_grouped, _MONEY_RE.sub(_money, text))
        text = _RUNS.sub(_unit_without_space, text)
        out: list[str] = []
        for i, part in enumerate(split_latin(text)):
            if i % 2 == 1 or not part.strip():
                out.append(part)
                continue
            lead = " " if part[:1].isspace() else ""
            trail = " " if part[-1:].isspace() else ""
            out.append(lead + self._normalizer.normalize_sentence(part.strip()) + trail)
        return re.sub(r"\s+", " ", "".join(out)).strip()


def has_han(text: str) -> bool:
    return _HAN_RE.search(text) is not None
