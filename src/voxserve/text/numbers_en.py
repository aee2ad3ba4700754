"""English number words: cardinals, years, ordinals, digit strings, decades, fractions and Roman numerals.

Pure string → words helpers shared by the normalizer's rules (:mod:`voxserve.text.normalize_en`).
"""

from __future__ import annotations

import re

from num2words import num2words

from voxserve.text.clean import check_digits

# A number as written: thousands separators, a decimal part, or a bare decimal (".5").
NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"

_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
# Denominators read as fractions ("3/4"); others read as two numbers ("24/7", "9/11", "50/50").
_FRACTION_DENOMINATORS = {2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 32, 64}
_UNICODE_FRACTIONS = {
    "½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5), "⅗": (3, 5),
    "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8), "⅞": (7, 8),
}  # fmt: skip
UNICODE_FRACTION_CHARS = "".join(_UNICODE_FRACTIONS)
# Only the canonical spelling of a Roman numeral counts ("IIII", "VX" and "CIVIL" are not numbers).
_ROMAN_RE = re.compile(r"M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
# Whole numbers up to 15 digits (hundreds of trillions) are read as number words; longer ones digit by
# digit, as people read them (num2words overflows past ~300 digits). Longer than MAX_DIGITS: refused.
_CARDINAL_DIGITS = 15


def words(n: int | float, **kwargs: str) -> str:
    """num2words without its commas and hyphens ("twenty-one" → "twenty one"), which the G2P would read.

    A whole number of more than 15 digits is read digit by digit (num2words overflows past ~300)."""
    if isinstance(n, int) and abs(n) >= 10**_CARDINAL_DIGITS:
        written = str(abs(n))
        check_digits(len(written))
        return ("minus " if n < 0 else "") + digits(written)
    return str(num2words(n, **kwargs)).replace(",", "").replace("-", " ")


def cardinal(text: str) -> str:
    """Words for a number written with optional thousands separators and decimals ("1,200.5")."""
    text = text.replace(",", "")
    negative = text.startswith("-")
    text = text.lstrip("-+")
    if "." in text:
        whole, frac = text.split(".", 1)
        spoken = (words(int(whole)) if whole else "zero") + " point " + " ".join(words(int(d)) for d in frac)
    else:
        spoken = words(int(text))
    return ("minus " + spoken) if negative else spoken


def year(value: int) -> str:
    return words(value, to="year")


def ordinal(value: int) -> str:
    return words(value, to="ordinal")


def is_year(text: str) -> bool:
    """A plain four-digit number that is most likely a year ("1999", "2024")."""
    return re.fullmatch(r"\d{4}", text) is not None and 1100 <= int(text) <= 2099


def number(text: str) -> str:
    """A standalone number: years as years, everything else as a cardinal."""
    return year(int(text)) if is_year(text) else cardinal(text)


def digits(text: str) -> str:
    """Digit by digit, for codes, phone numbers and numbers with leading zeros ("007")."""
    return " ".join(_DIGITS[int(d)] for d in text if d.isdigit())


def has_leading_zero(text: str) -> bool:
    return len(text) > 1 and text[0] == "0" and text[1].isdigit()


def plural(phrase: str) -> str:
    """Plural of the last word of a number phrase ("nineteen ninety" → "nineteen nineties")."""
    if phrase.endswith("y"):
        return phrase[:-1] + "ies"
    return phrase + "s"


def decade(text: str) -> str | None:
    """Words for a decade or century written "1990", "90", "'90" or "1800" (without the "s"); None if not one."""
    text = text.lstrip("'’")
    if len(text) == 2 and text[1] == "0" and text[0] != "0":
        return plural(words(int(text)))  # "90s" → "nineties", "10s" → "tens"
    if len(text) == 4 and text.endswith("0") and is_year(text):
        return plural(year(int(text)))  # "1800s" → "eighteen hundreds", "2000s" → "two thousands"
    return None


def is_fraction(numerator: int, denominator: int) -> bool:
    return 0 < numerator < denominator and denominator in _FRACTION_DENOMINATORS


def fraction(numerator: int, denominator: int, *, after_whole: bool = False) -> str:
    """ "3/4" → "three quarters"; after a whole number "1/2" is "a half" ("two and a half")."""
    if denominator == 2:
        name = "half" if numerator == 1 else "halves"
    elif denominator == 4:
        name = "quarter" if numerator == 1 else "quarters"
    else:
        name = ordinal(denominator) + ("" if numerator == 1 else "s")
    count = "a" if after_whole and numerator == 1 else words(numerator)
    return f"{count} {name}"


def mixed_fraction(whole: str | None, numerator: int, denominator: int) -> str:
    if whole is None:
        return fraction(numerator, denominator)
    return f"{cardinal(whole)} and {fraction(numerator, denominator, after_whole=True)}"


def unicode_fraction(char: str) -> tuple[int, int]:
    return _UNICODE_FRACTIONS[char]


def roman(text: str) -> int | None:
    """Value of an upper-case Roman numeral in canonical form; None for anything else."""
    if not text or _ROMAN_RE.fullmatch(text) is None:
        return None
    values = [_ROMAN_VALUES[ch] for ch in text]
    # A smaller value before a larger one is subtracted ("IV" = 5 - 1).
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))
