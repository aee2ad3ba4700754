"""Japanese numbers and counters → hiragana readings.

A number followed by one of the common counters below is read here as one word, with the
counter's usual sound changes and special readings (20歳 はたち, 1日 ついたち after a month,
3分の1); other numbers are left to the Japanese analyzer, which reads them in context.
"""

from __future__ import annotations

import re

_DIGITS = ("ぜろ", "いち", "に", "さん", "よん", "ご", "ろく", "なな", "はち", "きゅう")
# Readings of 1–9 before 十, 百 and 千 ("" where the unit alone is said: 十, 百, 千 not いちじゅう).
_BEFORE_TEN = ("", "", "に", "さん", "よん", "ご", "ろく", "なな", "はち", "きゅう")
_HUNDREDS = (
    "",
    "ひゃく",
    "にひゃく",
    "さんびゃく",
    "よんひゃく",
    "ごひゃく",
    "ろっぴゃく",
    "ななひゃく",
    "はっぴゃく",
    "きゅうひゃく",
)
_THOUSANDS = ("", "せん", "にせん", "さんぜん", "よんせん", "ごせん", "ろくせん", "ななせん", "はっせん", "きゅうせん")
# Myriad units: Japanese groups digits by four (万 = 10^4, 億 = 10^8, 兆 = 10^12).
_MYRIADS = ("", "まん", "おく", "ちょう")
_MAX = 10**16 - 1


def _below_myriad(n: int, unit: str) -> str:
    """1 ≤ n ≤ 9999, followed by the myriad unit ``unit`` ("" for none)."""
    thousands, rest = divmod(n, 1000)
    hundreds, rest = divmod(rest, 100)
    tens, ones = divmod(rest, 10)
    # 一千 is said in full (いっせん) only as a whole group before a unit: 1000万 いっせんまん.
    head = "いっせん" if n == 1000 and unit else _THOUSANDS[thousands]
    out = head + _HUNDREDS[hundreds] + (_BEFORE_TEN[tens] + "じゅう" if tens else "")
    if ones:
        out += _DIGITS[ones]
    if unit == "ちょう":
        out = _geminate(out, ("いち", "はち", "じゅう"))  # いっちょう, はっちょう, じゅっちょう
    return out + unit


def int_kana(n: int) -> str:
    """Reading of a non-negative integer; beyond 兆 the digits are read one by one."""
    if n == 0:
        return _DIGITS[0]
    if n > _MAX:
        return "".join(_DIGITS[int(d)] for d in str(n))
    groups: list[str] = []
    for i, unit in enumerate(_MYRIADS):
        group = n // 10 ** (4 * i) % 10**4
        if group:
            groups.append(_below_myriad(group, unit))
    return "".join(reversed(groups))


_SHORT = {"いち": "いっ", "ろく": "ろっ", "はち": "はっ", "じゅう": "じゅっ", "ひゃく": "ひゃっ"}


def _geminate(reading: str, tails: tuple[str, ...]) -> str:
    """The number's last syllable cut short (いち → いっ) when it ends with one of ``tails``."""
    for tail in tails:
        if reading.endswith(tail):
            return reading[: -len(tail)] + _SHORT[tail]
    return reading


def number_kana(text: str) -> str:
    """Reading of a written number: digits, optional thousands commas, optional decimal part."""
    whole, _, fraction = text.replace(",", "").partition(".")
    reading = int_kana(int(whole))
    if not fraction:
        return reading
    # 0.5 れいてんご; 1.5 いってんご; decimals are read digit by digit.
    head = "れい" if int(whole) == 0 else _geminate(reading, ("いち", "はち", "じゅう"))
    return head + "てん" + "".join(_DIGITS[int(d)] for d in fraction)


# Counter → (plain reading, {last sound of the number: number + counter with its sound change}).
# Keys are the number reading's ending; the longest matching key wins.
_P = {
    "いち": "いっぷ",
    "さん": "さんぷ",
    "よん": "よんぷ",
    "ろく": "ろっぷ",
    "はち": "はっぷ",
    "じゅう": "じゅっぷ",
    "ひゃく": "ひゃっぷ",
}
_COUNTERS: dict[str, tuple[str, dict[str, str]]] = {
    "時間": ("じかん", {"よん": "よじかん", "きゅう": "くじかん"}),
    "時": ("じ", {"よん": "よじ", "なな": "しちじ", "きゅう": "くじ"}),
    "分": ("ふん", {k: v + "ん" for k, v in _P.items()}),
    "秒": ("びょう", {}),
    "円": ("えん", {"よん": "よえん"}),
    "年": ("ねん", {"よん": "よねん"}),
    "月": ("がつ", {"よん": "しがつ", "なな": "しちがつ", "きゅう": "くがつ"}),
    "回": ("かい", {k: v + "かい" for k, v in _SHORT.items()}),
    "階": ("かい", {**{k: v + "かい" for k, v in _SHORT.items()}, "さん": "さんがい"}),
    "個": ("こ", {k: v + "こ" for k, v in _SHORT.items()}),
    "歳": ("さい", {"いち": "いっさい", "はち": "はっさい", "じゅう": "じゅっさい"}),
    "才": ("さい", {"いち": "いっさい", "はち": "はっさい", "じゅう": "じゅっさい"}),
    "本": (
        "ほん",
        {**{k: v.replace("ぷ", "ぽ") + "ん" for k, v in _P.items()}, "さん": "さんぼん", "よん": "よんほん"},
    ),
    "杯": (
        "はい",
        {**{k: v.replace("ぷ", "ぱ") + "い" for k, v in _P.items()}, "さん": "さんばい", "よん": "よんはい"},
    ),
    "匹": (
        "ひき",
        {**{k: v.replace("ぷ", "ぴ") + "き" for k, v in _P.items()}, "さん": "さんびき", "よん": "よんひき"},
    ),
    "枚": ("まい", {}),
    "人": ("にん", {"よん": "よにん"}),
    "日": ("にち", {}),
}
# Whole numbers with their own reading before a counter.
_SPECIAL: dict[str, dict[int, str]] = {
    "人": {1: "ひとり", 2: "ふたり"},
    "歳": {20: "はたち"},
    "才": {20: "はたち"},
    "日": {
        2: "ふつか", 3: "みっか", 4: "よっか", 5: "いつか", 6: "むいか", 7: "なのか", 8: "ようか",
        9: "ここのか", 10: "とおか", 14: "じゅうよっか", 20: "はつか", 24: "にじゅうよっか",
    },
}  # fmt: skip

_NUM = r"[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+"
_COUNTER_ALT = "|".join(sorted(_COUNTERS, key=len, reverse=True))
# A number (maybe with 万/億/兆 parts, as in 1億2000万) and maybe a counter. 分の is a fraction (3分の1).
NUMBER_RE = re.compile(
    rf"(?P<number>(?:(?:{_NUM})[兆億万])*(?:{_NUM})(?:\.[0-9]+)?[兆億万]?)"
    rf"(?:(?P<fraction>分)(?=の[0-9])|(?P<counter>{_COUNTER_ALT}))?"
)
_PART = re.compile(rf"({_NUM}(?:\.[0-9]+)?)([兆億万]?)")


def _with_units(written: str) -> str:
    """Reading of digits mixed with written myriad units: 1億2000万 → いちおくにせんまん."""
    out = ""
    for digits, unit in _PART.findall(written):
        unit_kana = _MYRIADS["万億兆".index(unit) + 1] if unit else ""
        if unit and "." not in digits and "," not in digits and int(digits) <= 9999:
            out += _below_myriad(int(digits), unit_kana) if int(digits) else ""
        else:
            out += number_kana(digits) + unit_kana
    return out or _DIGITS[0]


def counted_kana(number: str, counter: str, *, after_month: bool = False) -> str:
    """Reading of ``number`` (digits as written) followed by ``counter`` (a key of the counter table)."""
    reading = _with_units(number)
    plain = number.replace(",", "")
    if plain.isdigit():
        value = int(plain)
        if counter == "日" and value == 1:
            return "ついたち" if after_month else "いちにち"  # the 1st of a month, else "one day"
        special = _SPECIAL.get(counter, {}).get(value)
        if special:
            return special
    base, changes = _COUNTERS[counter]
    for tail in sorted(changes, key=len, reverse=True):
        if reading.endswith(tail):
            return reading[: -len(tail)] + changes[tail]
    return reading + base


def match_kana(match: re.Match[str], *, after_month: bool = False) -> str:
    """Reading of a ``NUMBER_RE`` match."""
    number = match.group("number")
    if match.group("counter"):
        return counted_kana(number, match.group("counter"), after_month=after_month)
    reading = _with_units(number)
    return reading + "ぶん" if match.group("fraction") else reading
