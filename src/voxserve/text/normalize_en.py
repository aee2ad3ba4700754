"""English text normalization: turn numbers, money, dates, times, units, links and symbols into words.

Acronyms and ordinary words are left alone for the G2P. Every rule is a regular expression
applied in a fixed order (links before numbers, phone numbers and dates before ranges, money
before plain numbers, …). Number words live in :mod:`voxserve.text.numbers_en`, money and units
in :mod:`voxserve.text.measures_en`, dates and times in :mod:`voxserve.text.dates_en`, and
abbreviations and Roman numerals in :mod:`voxserve.text.words_en`.

The segmenter cuts the raw text into sentences before this runs, so a full stop that ends a
sentence inside a segment must survive here (after "p.m.", "etc." or "St."): the G2P turns it
into the pause between the sentences.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from voxserve.text import dates_en, measures_en, words_en
from voxserve.text.numbers_en import (
    NUM,
    UNICODE_FRACTION_CHARS,
    cardinal,
    decade,
    digits,
    has_leading_zero,
    is_fraction,
    mixed_fraction,
    number,
    ordinal,
    unicode_fraction,
)

__all__ = ["cardinal", "normalize_english"]

_SYMBOLS = {"&": " and ", "@": " at ", "+": " plus ", "=": " equals ", "×": " times ", "÷": " divided by "}


def _ordinal(match: re.Match[str]) -> str:
    return ordinal(int(match.group(1).replace(",", "")))


def _number(match: re.Match[str]) -> str:
    return number(match.group(0))


def _digits(match: re.Match[str]) -> str:
    return digits(match.group(0))


def _phone(match: re.Match[str]) -> str:
    """Digit by digit, a comma (a short pause) between the groups as written."""
    text = match.group(0)
    groups = re.findall(r"\d+", text)
    if match["local"] and groups[0].endswith("00") and groups[1].endswith("00"):
        return text  # "500-1000" is a range, not a phone number
    if sum(len(group) for group in groups) < 7:
        return text  # "+5 10 20": too short for a phone number
    spoken = ", ".join(digits(group) for group in groups)
    return ("plus " + spoken) if text.startswith("+") else spoken


def _decade(match: re.Match[str]) -> str:
    first = decade(match["a"])
    if first is None or (match["b"] is None and not _decade_context(match)):
        return match.group(0)
    if match["b"] is None:
        return first
    second = decade(match["b"])
    return match.group(0) if second is None else f"{first} to {second}"


def _decade_context(match: re.Match[str]) -> bool:
    """ "90s" alone may be ninety seconds ("a 30s clip"): a decade only with an apostrophe, four digits, or
    after a word that introduces one ("the 90s", "her 30s", "mid-80s") or at the start of a sentence."""
    written = match["a"]
    if len(written) != 2:
        return True
    before = match.string[: match.start()]
    return before.strip() == "" or _DECADE_LEAD.search(before[-12:]) is not None


def _plural_power(match: re.Match[str]) -> str:
    return {"10": "tens", "100": "hundreds", "1000": "thousands"}[match.group(1)]


def _range(match: re.Match[str]) -> str:
    """ "10-20" → "10 to 20", left in digits for the rules that follow (units, times, years)."""
    first, second = match["a"], match["b"]
    if has_leading_zero(first) or has_leading_zero(second):
        return match.group(0)  # "2024-03", "01-05": codes, not ranges
    rest = match.string[match.end() :]
    joint = " minus " if re.match(r"\s?=", rest) else " to "  # "5-3=2" is arithmetic
    return f"{first}{match['am'] or ''}{joint}{second}"


def _fraction(match: re.Match[str]) -> str:
    whole, top, bottom = match["whole"], int(match["num"]), int(match["den"])
    if is_fraction(top, bottom):
        return mixed_fraction(whole, top, bottom)
    # "24/7", "9/11", "50/50": two numbers, said one after the other.
    spoken = f"{number(match['num'])} {number(match['den'])}"
    return f"{number(whole)} {spoken}" if whole else spoken


def _unicode_fraction(match: re.Match[str]) -> str:
    top, bottom = unicode_fraction(match["frac"])
    return mixed_fraction(match["whole"], top, bottom)


def _spell_host(host: str) -> str:
    return " dot ".join(part for part in host.split(".") if part)


def _url(match: re.Match[str]) -> str:
    url = re.sub(r"^(?:https?://)?(?:www\.)?", "", match.group(0), flags=re.IGNORECASE).rstrip("/")
    host, _, path = url.partition("/")
    spoken = _spell_host(host)
    if path:
        spoken += " slash " + " slash ".join(_spell_host(p) for p in path.split("/") if p)
    return spoken


def _email(match: re.Match[str]) -> str:
    user, host = match.group(1), match.group(2)
    return f"{_spell_host(user)} at {_spell_host(host)}"


_URL_RE = re.compile(r"\b(?:https?://|www\.)[^\s<>\"]+[^\s<>\".,;:!?)]", re.IGNORECASE)
_BARE_DOMAIN_RE = re.compile(
    r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|dev|ai|edu|gov|co|uk)\b(?:/[^\s]*[^\s.,;:!?)])?", re.IGNORECASE
)
_EMAIL_RE = re.compile(r"\b([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)\b")
_PHONE_RE = re.compile(
    r"(?<![\w+.,/-])(?:"
    r"\+\d{1,3}(?:[ .-]\(?\d{1,4}\)?){2,5}"  # +1 555 123 4567, +44 20 7946 0958
    r"|(?:1[ .-])?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}"  # (555) 123-4567, 1-800-555-1234
    r"|(?P<local>[2-9]\d{2}-\d{4})"  # 555-1234
    r")(?![\w-]|[.,]\d)"
)
_DECADE = r"['’]?\d{2}|\d{4}"
# "the 1800s", "'90s", "1960s-70s"; the 's' must close the word ("90sec" is not a decade).
_DECADE_RE = re.compile(rf"(?<![\w.,'’])(?P<a>{_DECADE})(?:(?:['’]?s)?(?:-|\s?–\s?)(?P<b>{_DECADE}))?['’]?s\b")
_DECADE_LEAD = re.compile(
    r"(?:\b(?:the|their|his|her|my|our|your|its|early|mid|late|and|or|to|through)\s+|\b(?:mid|early|late)-|[.!?]\s+)$",
    re.IGNORECASE,
)
_PLURAL_POWERS_RE = re.compile(r"(?<![\w.,])(10|100|1000)s(?= of\b)")  # "100s of people" → "hundreds of"
_RANGE_OPERAND = rf"(?:{NUM})(?::\d{{2}})?"
_RANGE_RE = re.compile(
    rf"(?<![\w.,:/-])(?P<a>{_RANGE_OPERAND})(?P<am>\s?[ap]\.?m\.?)?(?:-|\s?–\s?)(?P<b>{_RANGE_OPERAND})"
    r"(?!\d|[-–/.,:]\d)",
    re.IGNORECASE,
)
_FRACTION_RE = re.compile(r"(?<![\w.,/⁄])(?:(?P<whole>\d+) )?(?P<num>\d+)[/⁄](?P<den>\d+)(?![\w/⁄]|[.,]\d)")
_UNICODE_FRACTION_RE = re.compile(rf"(?:(?<![\w.,])(?P<whole>\d+) ?)?(?P<frac>[{UNICODE_FRACTION_CHARS}])")

_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (_EMAIL_RE, _email),
    (_URL_RE, _url),
    (_BARE_DOMAIN_RE, _url),
    (_PHONE_RE, _phone),
    (dates_en.DATE_SLASH_RE, dates_en.date_slash),
    (dates_en.DATE_ISO_RE, dates_en.date_iso),
    (dates_en.DATE_NAMED_RE, dates_en.date_named),
    # "St." looks at the raw word before it ("Baker St.", "5th St.") before numbers become words.
    (words_en.SAINT_STREET_RE, words_en.saint_or_street),
    (_DECADE_RE, _decade),
    (_PLURAL_POWERS_RE, _plural_power),
    (measures_en.MONEY_RANGE_RE, measures_en.money_range),
    (_RANGE_RE, _range),
    (dates_en.TIME_RE, dates_en.time),
    (dates_en.TIME_DOT_RE, dates_en.time),
    (dates_en.HOUR_MERIDIEM_RE, dates_en.hour_meridiem),
    (measures_en.MONEY_RE, measures_en.money),
    (measures_en.CENTS_RE, measures_en.cents),
    (measures_en.PERCENT_RE, measures_en.percent),
    (re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:st|nd|rd|th)\b", re.IGNORECASE), _ordinal),
    (_UNICODE_FRACTION_RE, _unicode_fraction),
    (_FRACTION_RE, _fraction),
    (measures_en.SCALED_RE, measures_en.scaled),
    (measures_en.UNIT_RE, measures_en.unit),
    *words_en.WORD_RULES,
    (re.compile(r"\b(?:No|no)\.\s?(?=\d)"), "number "),
    (re.compile(r"#(?=\d)"), "number "),
    # A leading zero marks a code, not a quantity: "007", the zip code "02134".
    (re.compile(r"(?<![\w.,])0\d+(?!\w|[.,]\d)"), _digits),
    (re.compile(rf"(?<![\w.])(?:-(?=\d))?(?:{NUM})(?![\w])"), _number),
]


def normalize_english(text: str) -> str:
    """Rewrite ``text`` so that every number, symbol and link is spelled out in words. The frontend has
    refused numbers too long to read (:func:`voxserve.text.clean.check_numbers`)."""
    text = measures_en.english_separators(text)
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    for symbol, spoken in _SYMBOLS.items():
        text = text.replace(symbol, spoken)
    return re.sub(r"[ \t]{2,}", " ", text).strip()
