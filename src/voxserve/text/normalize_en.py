"""English text normalization: turn numbers, money, dates, times, units, links and symbols into words.

Acronyms and ordinary words are left alone for the G2P. Every rule is a regular expression
applied in a fixed order (links before numbers, money before plain numbers, …).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from num2words import num2words

_MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
_MONTH_ABBR = {m[:3].lower(): m for m in _MONTHS}

_CURRENCY: dict[str, tuple[str, str, str, str]] = {
    # symbol: (singular, plural, cent singular, cent plural)
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yen", "yen", "sen", "sen"),
    "₹": ("rupee", "rupees", "paisa", "paise"),
}
_SCALES = "thousand|million|billion|trillion"

_UNITS: dict[str, tuple[str, str]] = {
    "km": ("kilometer", "kilometers"),
    "m": ("meter", "meters"),
    "L": ("liter", "liters"),
    "cm": ("centimeter", "centimeters"),
    "mm": ("millimeter", "millimeters"),
    "mi": ("mile", "miles"),
    "ft": ("foot", "feet"),
    "in": ("inch", "inches"),
    "kg": ("kilogram", "kilograms"),
    "g": ("gram", "grams"),
    "mg": ("milligram", "milligrams"),
    "lb": ("pound", "pounds"),
    "lbs": ("pound", "pounds"),
    "oz": ("ounce", "ounces"),
    "l": ("liter", "liters"),
    "ml": ("milliliter", "milliliters"),
    "mph": ("mile per hour", "miles per hour"),
    "km/h": ("kilometer per hour", "kilometers per hour"),
    "kph": ("kilometer per hour", "kilometers per hour"),
    "°c": ("degree Celsius", "degrees Celsius"),
    "°f": ("degree Fahrenheit", "degrees Fahrenheit"),
    "°": ("degree", "degrees"),
    "kb": ("kilobyte", "kilobytes"),
    "mb": ("megabyte", "megabytes"),
    "gb": ("gigabyte", "gigabytes"),
    "tb": ("terabyte", "terabytes"),
    "ms": ("millisecond", "milliseconds"),
    "s": ("second", "seconds"),
    "sec": ("second", "seconds"),
    "min": ("minute", "minutes"),
    "h": ("hour", "hours"),
    "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"),
    "hz": ("hertz", "hertz"),
    "khz": ("kilohertz", "kilohertz"),
    "mhz": ("megahertz", "megahertz"),
    "ghz": ("gigahertz", "gigahertz"),
    "kw": ("kilowatt", "kilowatts"),
    "W": ("watt", "watts"),
    "V": ("volt", "volts"),
}
# Units that are also ordinary words or letters are only expanded right after a number with no space.
_TIGHT_ONLY = {"m", "in", "g", "l", "L", "s", "h", "W", "V"}

_TITLES = {
    "dr": "Doctor",
    "mr": "Mister",
    "mrs": "Missus",
    "ms": "Miz",
    "prof": "Professor",
    "st": "Saint",
    "jr": "Junior",
    "sr": "Senior",
    "gen": "General",
    "capt": "Captain",
    "sgt": "Sergeant",
    "rev": "Reverend",
}
_ABBREVIATIONS = {
    "e.g.": "for example",
    "i.e.": "that is",
    "vs.": "versus",
    "approx.": "approximately",
    "etc.": "et cetera",
    "inc.": "Incorporated",
    "ltd.": "Limited",
    "dept.": "department",
    "est.": "established",
}
_SYMBOLS = {"&": " and ", "@": " at ", "+": " plus ", "=": " equals ", "×": " times ", "÷": " divided by "}

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"


def _words(n: int | float, **kwargs: str) -> str:
    return str(num2words(n, **kwargs)).replace(",", "").replace("-", " ")


def cardinal(text: str) -> str:
    """Words for a number written with optional thousands separators and decimals ("1,200.5")."""
    text = text.replace(",", "")
    negative = text.startswith("-")
    text = text.lstrip("-+")
    if "." in text:
        whole, frac = text.split(".", 1)
        spoken = (_words(int(whole)) if whole else "zero") + " point " + " ".join(_words(int(d)) for d in frac)
    else:
        spoken = _words(int(text))
    return ("minus " + spoken) if negative else spoken


def year(value: int) -> str:
    return _words(value, to="year")


def ordinal(value: int) -> str:
    return _words(value, to="ordinal")


def _money(match: re.Match[str]) -> str:
    symbol, amount, scale = match.group("sym"), match.group("amt"), match.group("scale")
    one, many, cent_one, cent_many = _CURRENCY[symbol]
    if scale:
        return f"{cardinal(amount)} {scale.lower()} {many}"
    whole, _, frac = amount.replace(",", "").partition(".")
    units = int(whole or "0")
    cents = int((frac + "00")[:2]) if frac else 0
    parts = []
    if units or not cents:
        parts.append(f"{_words(units)} {one if units == 1 else many}")
    if cents:
        parts.append(f"{_words(cents)} {cent_one if cents == 1 else cent_many}")
    return " and ".join(parts)


def _cents(match: re.Match[str]) -> str:
    value = int(match.group(1))
    return f"{_words(value)} {'cent' if value == 1 else 'cents'}"


def _percent(match: re.Match[str]) -> str:
    return f"{cardinal(match.group(1))} percent"


def _ordinal(match: re.Match[str]) -> str:
    return ordinal(int(match.group(1)))


def _date_words(month: int, day: int, year_text: str | None) -> str:
    spoken = f"{_MONTHS[month - 1]} {ordinal(day)}"
    if year_text:
        spoken += f" {year(int(year_text))}"
    return spoken


def _date_us(match: re.Match[str]) -> str:
    month, day, yr = int(match.group(1)), int(match.group(2)), match.group(3)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0)
    if len(yr) == 2:
        yr = "20" + yr
    return _date_words(month, day, yr)


def _date_iso(match: re.Match[str]) -> str:
    yr, month, day = match.group(1), int(match.group(2)), int(match.group(3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return match.group(0)
    return _date_words(month, day, yr)


def _date_named(match: re.Match[str]) -> str:
    month = _MONTH_ABBR[match.group(1)[:3].lower()]
    day, yr = int(match.group(2)), match.group(3)
    return _date_words(_MONTHS.index(month) + 1, day, yr)


def _time(match: re.Match[str]) -> str:
    hour, minute, suffix = int(match.group(1)), int(match.group(2)), match.group(3)
    end = _meridiem_end(match, ".", ".") if suffix and suffix.endswith(".") else ""
    if hour > 24 or minute > 59:
        return match.group(0)
    spoken = _words(hour)
    if minute == 0:
        spoken += "" if suffix else " o'clock" if hour <= 12 else " hundred"
    elif minute < 10:
        spoken += f" oh {_words(minute)}"
    else:
        spoken += f" {_words(minute)}"
    if suffix:
        spoken += " " + " ".join(suffix.lower().replace(".", ""))
    return spoken + end


def _meridiem_end(match: re.Match[str], inner_dot: str, final_dot: str) -> str:
    """Keep a full stop that ends the sentence after "pm." or "p.m."."""
    if not final_dot:
        return ""
    at_end = match.string[match.end() :].strip() == ""
    return "." if (not inner_dot or at_end) else ""


def _hour_meridiem(match: re.Match[str]) -> str:
    end = _meridiem_end(match, match.group(3), match.group(4))
    return f"{_words(int(match.group(1)))} {match.group(2).lower()} m{end}"


def _unit(match: re.Match[str]) -> str:
    number, space, unit = match.group("num"), match.group("space"), match.group("unit")
    key = unit if len(unit) == 1 else unit.lower()
    if key not in _UNITS or (space and key in _TIGHT_ONLY):
        return match.group(0)
    one, many = _UNITS[key]
    value = float(number.replace(",", ""))
    return f"{cardinal(number)} {one if value == 1 else many}"


def _number(match: re.Match[str]) -> str:
    text = match.group(0)
    plain = text.lstrip("-")
    if re.fullmatch(r"\d{4}", plain) and not text.startswith("-") and 1100 <= int(plain) <= 2099:
        return year(int(plain))
    return cardinal(text)


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


def _title(match: re.Match[str]) -> str:
    return _TITLES[match.group(1).lower()] + " "


def _abbreviation(match: re.Match[str]) -> str:
    word = _ABBREVIATIONS[match.group(1).lower()]
    at_end = match.end() == len(match.string) or match.string[match.end() :].strip() == ""
    return word + ("." if at_end else "")


_URL_RE = re.compile(r"\b(?:https?://|www\.)[^\s<>\"]+[^\s<>\".,;:!?)]", re.IGNORECASE)
_BARE_DOMAIN_RE = re.compile(
    r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|dev|ai|edu|gov|co|uk)\b(?:/[^\s]*[^\s.,;:!?)])?", re.IGNORECASE
)
_EMAIL_RE = re.compile(r"\b([\w.+-]+)@([\w-]+(?:\.[\w-]+)+)\b")

_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (_EMAIL_RE, _email),
    (_URL_RE, _url),
    (_BARE_DOMAIN_RE, _url),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b"), _date_us),
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), _date_iso),
    (
        re.compile(
            r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b"
            r"(?:,?\s+(\d{4})\b)?"
        ),
        _date_named,
    ),
    (re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*([ap]\.?m\.?)?(?![\w:])", re.IGNORECASE), _time),
    (re.compile(r"\b(\d{1,2})\s?([ap])(\.?)m\b(\.?)", re.IGNORECASE), _hour_meridiem),
    (
        re.compile(rf"(?P<sym>[$€£¥₹])\s?(?P<amt>{_NUM})(?:\s?(?P<scale>{_SCALES})\b)?", re.IGNORECASE),
        _money,
    ),
    (re.compile(r"\b(\d+)\s?¢"), _cents),
    (re.compile(rf"(-?(?:{_NUM}))\s?%"), _percent),
    (re.compile(r"\b(\d+)(?:st|nd|rd|th)\b", re.IGNORECASE), _ordinal),
    (
        re.compile(
            rf"(?P<num>-?(?:{_NUM}))(?P<space>\s?)(?P<unit>km/h|°[CF]|°|[a-zA-Z]{{1,3}})(?![\w°])",
        ),
        _unit,
    ),
    (re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|Gen|Capt|Sgt|Rev)\.\s*(?=[A-Z])"), _title),
    (re.compile(r"\bSt\.", re.IGNORECASE), "Street"),
    (
        re.compile(r"(?<![\w.])(e\.g\.|i\.e\.|vs\.|approx\.|etc\.|inc\.|ltd\.|dept\.|est\.)", re.IGNORECASE),
        _abbreviation,
    ),
    (re.compile(r"\b(?:No|no)\.\s?(?=\d)"), "number "),
    (re.compile(r"#(?=\d)"), "number "),
    (re.compile(r"(?<![\w.])(?:-(?=\d))?(?:" + _NUM + r")(?![\w])"), _number),
]


def normalize_english(text: str) -> str:
    """Rewrite ``text`` so that every number, symbol and link is spelled out in words."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    for symbol, spoken in _SYMBOLS.items():
        text = text.replace(symbol, spoken)
    return re.sub(r"[ \t]{2,}", " ", text).strip()
