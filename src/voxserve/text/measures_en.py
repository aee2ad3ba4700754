"""English normalizer rules for amounts: money, percentages, scale suffixes ("5M", "10k") and units."""

from __future__ import annotations

import re

from voxserve.text.numbers_en import NUM, cardinal, words

_CURRENCY: dict[str, tuple[str, str, str, str]] = {
    # symbol: (singular, plural, cent singular, cent plural)
    "$": ("dollar", "dollars", "cent", "cents"),
    "€": ("euro", "euros", "cent", "cents"),
    "£": ("pound", "pounds", "penny", "pence"),
    "¥": ("yen", "yen", "sen", "sen"),
    "₹": ("rupee", "rupees", "paisa", "paise"),
}
# Country prefixes of a dollar sign ("US$5" → "five US dollars").
_DOLLAR_PREFIX = {
    "US": "US",
    "A": "Australian",
    "AU": "Australian",
    "C": "Canadian",
    "CA": "Canadian",
    "NZ": "New Zealand",
    "HK": "Hong Kong",
    "S": "Singapore",
}
_SCALES = "thousand|million|billion|trillion"
# Written-out scales follow an amount after an optional space; abbreviations touch it ("$5M", "£1m", "3bn").
_SCALE_ABBR = {"k": "thousand", "m": "million", "mn": "million", "b": "billion", "bn": "billion", "tn": "trillion"}
_SCALE_ABBR_RE = "k|K|mn|m|M|bn|Bn|b|B|tn|T"

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
# All-caps spellings that are far more often acronyms than units ("3 ML models", "2 HR managers", "5 MS patients").
_ACRONYMS = {"ML", "MS", "HR", "MI", "SEC", "IN"}

_SYM = r"[$€£¥₹]"


def _amount(p: str) -> str:
    """An amount with its symbol; group names get the prefix ``p`` so that a range can hold two."""
    return (
        rf"(?:(?<![\w])(?P<{p}code>US|AU|NZ|HK|CA|A|C|S)(?=\$))?(?P<{p}sym>{_SYM})\s?(?P<{p}neg>-)?"
        rf"(?P<{p}amt>{NUM})(?:\s?(?P<{p}scale>{_SCALES})\b|(?P<{p}abbr>{_SCALE_ABBR_RE})(?![\w]))?"
    )


MONEY_RANGE_RE = re.compile(
    "(?<![\\w.,])"
    + _amount("a")
    + rf"\s?[-–]\s?(?:{_SYM})?(?P<bamt>{NUM})(?:\s?(?P<bscale>{_SCALES})\b|(?P<babbr>{_SCALE_ABBR_RE})(?![\w]))?",
    re.IGNORECASE,
)
MONEY_RE = re.compile("(?P<minus>(?<![\\w.,])-)?" + _amount(""), re.IGNORECASE)
CENTS_RE = re.compile(r"\b(\d+)\s?¢")
PERCENT_RE = re.compile(rf"(-?(?:{NUM}))\s?%")
# "1.5M users", "10k", "3bn"; a bare "B" is a billion only with a decimal ("2.5B"), since "221B" is an address.
SCALED_RE = re.compile(rf"(?<![\w.,])(?:(?P<num>-?(?:{NUM}))(?P<abbr>[kK]|M|mn|bn|Bn|tn)|(?P<dec>-?\d+\.\d+)B)(?![\w])")
UNIT_RE = re.compile(rf"(?P<num>-?(?:{NUM}))(?P<space>\s?)(?P<unit>km/h|°[CF]|°|[a-zA-Z]{{1,3}})(?![\w°])")


# Numbers written the continental way ("1.234,56") in English text, and amounts in a currency whose
# home locales write them so (€1.234 is a thousand two hundred thirty-four euros, €3,50 three euros
# fifty): rewritten as 1,234.56 before the rules below read them. A lone "1.234" without such a
# currency stays a decimal, the English reading.
_COMMA_DECIMAL_SYMBOLS = "€"
_DOT_GROUPED = r"\d{1,3}(?:\.\d{3})+"
_CONTINENTAL_RE = re.compile(rf"(?<![\d.,])(?:{_DOT_GROUPED},\d+|\d{{1,3}}(?:\.\d{{3}}){{2,}})(?![\d]|[.,]\d)")
_COMMA_AMOUNT = rf"(?:{_DOT_GROUPED}(?:,\d{{1,2}})?|\d+,\d{{1,2}})"
_SYMBOL_FIRST_RE = re.compile(
    rf"(?P<sym>[{_COMMA_DECIMAL_SYMBOLS}])(?P<space>\s?)(?P<amt>{_COMMA_AMOUNT})(?![\d]|[.,]\d)"
)
_SYMBOL_AFTER_RE = re.compile(
    rf"(?<![\w.,])(?P<amt>{_COMMA_AMOUNT}|\d+(?:\.\d{{1,2}})?)\s?(?P<sym>[{_COMMA_DECIMAL_SYMBOLS}])(?!\w)"
)


def _point_style(written: str) -> str:
    """1.234,56 → 1,234.56 (groups by comma, decimals by point)."""
    whole, _, fraction = written.partition(",")
    return whole.replace(".", ",") + (f".{fraction}" if fraction else "")


def _symbol_first(match: re.Match[str]) -> str:
    """ "1.234,56 €" → "€1,234.56": the symbol where the money rule looks for it."""
    amount = match["amt"]
    continental = "," in amount or re.fullmatch(_DOT_GROUPED, amount) is not None
    return match["sym"] + (_point_style(amount) if continental else amount)


def english_separators(text: str) -> str:
    """Continental-style numbers and comma-locale currency amounts → the point style English rules read."""
    text = _SYMBOL_FIRST_RE.sub(lambda m: m["sym"] + _point_style(m["amt"]), text)
    text = _SYMBOL_AFTER_RE.sub(_symbol_first, text)
    return _CONTINENTAL_RE.sub(lambda m: _point_style(m.group()), text)


def _scale_word(written: str | None, abbr: str | None) -> str:
    if written:
        return written.lower()
    return _SCALE_ABBR[abbr.lower()] if abbr else ""


def _currency_names(symbol: str, code: str | None) -> tuple[str, str, str, str]:
    one, many, cent_one, cent_many = _CURRENCY[symbol]
    if code:
        country = _DOLLAR_PREFIX[code.upper()]
        one, many = f"{country} {one}", f"{country} {many}"
    return one, many, cent_one, cent_many


def _money_words(amount: str, names: tuple[str, str, str, str]) -> str:
    one, many, cent_one, cent_many = names
    whole, _, frac = amount.replace(",", "").partition(".")
    units = int(whole or "0")
    cents = int((frac + "00")[:2]) if frac else 0
    parts = []
    if units or not cents:
        parts.append(f"{words(units)} {one if units == 1 else many}")
    if cents:
        parts.append(f"{words(cents)} {cent_one if cents == 1 else cent_many}")
    return " and ".join(parts)


def money(match: re.Match[str]) -> str:
    names = _currency_names(match["sym"], match["code"])
    scale = _scale_word(match["scale"], match["abbr"])
    spoken = f"{cardinal(match['amt'])} {scale} {names[1]}" if scale else _money_words(match["amt"], names)
    # The sign may sit before the symbol ("-$50") or after it ("$-5").
    return ("minus " + spoken) if match["minus"] or match["neg"] else spoken


def money_range(match: re.Match[str]) -> str:
    """ "$10-$20" → "ten to twenty dollars"; amounts with cents keep their own units."""
    names = _currency_names(match["asym"], match["acode"])
    first, second = match["aamt"], match["bamt"]
    second_scale = _scale_word(match["bscale"], match["babbr"])
    first_scale = _scale_word(match["ascale"], match["aabbr"])
    if match["aneg"]:
        return match.group(0)  # "$-5-10": leave it to the single-amount rule
    if not first_scale and not second_scale and ("." in first or "." in second):
        return f"{_money_words(first, names)} to {_money_words(second, names)}"
    # "$5-10M" shares the scale; "$500k-1M" says both.
    low = cardinal(first) + (f" {first_scale}" if first_scale and first_scale != second_scale else "")
    high = cardinal(second) + (f" {second_scale}" if second_scale else "")
    return f"{low} to {high} {names[1]}"


def cents(match: re.Match[str]) -> str:
    value = int(match.group(1))
    return f"{words(value)} {'cent' if value == 1 else 'cents'}"


def percent(match: re.Match[str]) -> str:
    return f"{cardinal(match.group(1))} percent"


def scaled(match: re.Match[str]) -> str:
    if match["dec"]:
        return f"{cardinal(match['dec'])} billion"
    return f"{cardinal(match['num'])} {_SCALE_ABBR[match['abbr'].lower()]}"


def unit(match: re.Match[str]) -> str:
    number, space, written = match["num"], match["space"], match["unit"]
    key = written if len(written) == 1 else written.lower()
    if key not in _UNITS or (space and key in _TIGHT_ONLY) or written in _ACRONYMS:
        return match.group(0)
    one, many = _UNITS[key]
    # Only exactly "1" is singular: "1.0 km" is read "one point zero kilometers".
    return f"{cardinal(number)} {one if number.lstrip('+-') == '1' else many}"
