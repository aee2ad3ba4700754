"""English normalizer rules for dates ("12/25/2024", "2024-12-25", "Dec. 25") and clock times."""

from __future__ import annotations

import re

from voxserve.text.numbers_en import ordinal, words, year

_MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
_MONTH_ABBR = {m[:3].lower(): m for m in _MONTHS}
# Whole month names or their standard abbreviations only: "Maybe", "Mario", "Marcus" and "Octavia" are not dates.
_MONTH_NAMES = "|".join([*_MONTHS, "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sept", "Sep", "Oct", "Nov", "Dec"])

DATE_SLASH_RE = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b")
DATE_ISO_RE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
DATE_NAMED_RE = re.compile(
    rf"\b({_MONTH_NAMES})\b\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?![.,:/-]?\d)(?:,?\s+(\d{{4}})\b)?"
)
_MERIDIEM = r"[ap]\.?m\b\.?"
TIME_RE = re.compile(
    rf"\b(?P<hour>\d{{1,2}}):(?P<minute>\d{{2}})(?::(?P<second>\d{{2}}))?(?:\s*(?P<suffix>{_MERIDIEM}))?(?![\w:])",
    re.IGNORECASE,
)
# "9.30am": a dot between hour and minutes is a time only with am/pm, else it is a decimal.
TIME_DOT_RE = re.compile(rf"\b(?P<hour>\d{{1,2}})\.(?P<minute>\d{{2}})\s*(?P<suffix>{_MERIDIEM})(?!\w)", re.IGNORECASE)
HOUR_MERIDIEM_RE = re.compile(r"\b(\d{1,2})\s?([ap])(\.?)m\b(\.?)", re.IGNORECASE)


def _date_words(month: int, day: int, year_text: str | None) -> str:
    spoken = f"{_MONTHS[month - 1]} {ordinal(day)}"
    if year_text:
        spoken += f" {year(int(year_text))}"
    return spoken


def date_slash(match: re.Match[str]) -> str:
    """Month first ("12/25/2024") unless the first number cannot be a month ("31/12/2023")."""
    month, day, yr = int(match.group(1)), int(match.group(2)), match.group(3)
    if month > 12 and day <= 12:
        month, day = day, month
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0)
    if len(yr) == 2:
        yr = "20" + yr
    return _date_words(month, day, yr)


def date_iso(match: re.Match[str]) -> str:
    yr, month, day = match.group(1), int(match.group(2)), int(match.group(3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0)
    return _date_words(month, day, yr)


def date_named(match: re.Match[str]) -> str:
    month = _MONTH_ABBR[match.group(1)[:3].lower()]
    day, yr = int(match.group(2)), match.group(3)
    if not 1 <= day <= 31:
        return match.group(0)
    return _date_words(_MONTHS.index(month) + 1, day, yr)


def sentence_follows(match: re.Match[str]) -> bool:
    """Whether the text after ``match`` starts a new sentence: nothing, or whitespace and a capital letter."""
    rest = match.string[match.end() :]
    return rest.strip() == "" or re.match(r"\s+[\"'“‘(]?[A-Z]", rest) is not None


def _meridiem(suffix: str, match: re.Match[str]) -> str:
    """ "AM"/"PM" (the G2P reads "a m" as the article "a"); keeps a full stop that ends the sentence.

    "p.m." ends with an abbreviation dot that also serves as the sentence's full stop when a new
    sentence follows; a plain "pm." always ends one.
    """
    letters = suffix.replace(".", "").upper()
    if not suffix.endswith("."):
        return letters
    inner_dot = "." in suffix[:-1]
    return letters + ("." if not inner_dot or sentence_follows(match) else "")


def time(match: re.Match[str]) -> str:
    hour, minute, suffix = int(match["hour"]), int(match["minute"]), match["suffix"]
    second = int(match.groupdict().get("second") or 0)
    if hour > 24 or minute > 59 or second > 59:
        return match.group(0)
    spoken = words(hour)
    if minute == 0:
        spoken += "" if suffix else " o'clock" if 1 <= hour <= 12 else " hundred"
    elif minute < 10:
        spoken += f" oh {words(minute)}"
    else:
        spoken += f" {words(minute)}"
    if second:
        spoken += f" and {words(second)} {'second' if second == 1 else 'seconds'}"
    if suffix:
        spoken += " " + _meridiem(suffix, match)
    return spoken


def hour_meridiem(match: re.Match[str]) -> str:
    suffix = match.group(2) + match.group(3) + "m" + match.group(4)
    return f"{words(int(match.group(1)))} {_meridiem(suffix, match)}"
