"""Korean numbers in words, Sino-Korean or native by the counter after them.

Korean counts with two number systems. Native numbers (하나, 둘, 셋 … 아흔아홉) go before counters of
things, people, age, hours and times (사과 3개 → 사과 세 개, 2명 → 두 명, 5시 → 다섯 시), in the short
forms 한, 두, 세, 네, 스무 that take a counter; beyond 99 the Sino-Korean numbers take over. Sino-Korean
numbers (일, 이, 삼 …) read everything else: dates, minutes, money, floors, plain numbers (2024년 →
이천이십사 년, 3월 5일 → 삼 월 오 일, except 6월 유월 and 10월 시월). espeak-ng, which reads the
Hangul afterwards, reads digits in Sino-Korean only.
"""

from __future__ import annotations

import re

_SINO_DIGITS = ("영", "일", "이", "삼", "사", "오", "육", "칠", "팔", "구")
_SINO_UNITS = ("", "십", "백", "천")
_MYRIADS = ("", "만", "억", "조", "경")
_NATIVE_ONES = ("", "하나", "둘", "셋", "넷", "다섯", "여섯", "일곱", "여덟", "아홉")
_NATIVE_TENS = ("", "열", "스물", "서른", "마흔", "쉰", "예순", "일흔", "여든", "아흔")
# The forms native numbers take right before a counter.
_BEFORE_COUNTER = {"하나": "한", "둘": "두", "셋": "세", "넷": "네", "스물": "스무"}

# Counters read with native numbers (up to 99).
NATIVE_COUNTERS = (
    "시간", "사람", "마리", "켤레", "송이", "군데", "가지", "그루", "달", "개", "명", "살", "시", "번", "권",
    "잔", "병", "장", "대", "벌", "통", "곳", "채", "척", "줄", "쌍",
)  # fmt: skip
# Counters and units read with Sino-Korean numbers.
SINO_COUNTERS = (
    "학년", "퍼센트", "킬로", "미터", "개월", "년", "월", "일", "분", "초", "원", "층", "호", "도", "인분", "주년", "%",
)  # fmt: skip
_MONTHS = {6: "유월", 10: "시월"}

_NUMBER = r"[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+(?:\.[0-9]+)?"
_COUNTER_ALT = "|".join(re.escape(c) for c in sorted(NATIVE_COUNTERS + SINO_COUNTERS, key=len, reverse=True))
NUMBER_RE = re.compile(rf"(?P<number>{_NUMBER})(?P<space> ?)(?P<counter>{_COUNTER_ALT})?")
_FULLWIDTH = str.maketrans("０１２３４５６７８９，．％", "0123456789,.%")


def sino(n: int) -> str:
    """Sino-Korean reading of a non-negative integer (10000 → 만, 1억 → 일억, 1100 → 천백)."""
    if n == 0:
        return _SINO_DIGITS[0]
    words: list[str] = []
    for power in range(len(_MYRIADS) - 1, -1, -1):
        group = n // 10 ** (4 * power) % 10**4
        if not group:
            continue
        part = ""
        for place in range(3, -1, -1):
            digit = group // 10**place % 10
            if digit:
                part += ("" if digit == 1 and place else _SINO_DIGITS[digit]) + _SINO_UNITS[place]
        if power == 1 and group == 1:
            part = ""  # 만, not 일만
        words.append(part + _MYRIADS[power])
    return "".join(words)


def native(n: int, *, before_counter: bool = False) -> str:
    """Native Korean reading of 1..99 (하나 … 아흔아홉); the short form before a counter when asked."""
    if not 1 <= n <= 99:
        raise ValueError(f"native Korean numbers go from 1 to 99, not {n}")
    tens, ones = divmod(n, 10)
    tail = _NATIVE_ONES[ones] if ones else _NATIVE_TENS[tens]
    head = _NATIVE_TENS[tens] if ones else ""
    if before_counter:
        tail = _BEFORE_COUNTER.get(tail, tail)
    return head + tail


def _decimal(written: str) -> str:
    whole, _, fraction = written.replace(",", "").partition(".")
    reading = sino(int(whole))
    if fraction:
        reading += "점" + "".join(_SINO_DIGITS[int(d)] for d in fraction)
    return reading


def read_number(written: str, counter: str = "") -> str:
    """``written`` digits (maybe with commas or a decimal point) followed by ``counter``, in words."""
    plain = written.replace(",", "")
    if counter == "%":
        return f"{_decimal(written)} 퍼센트"
    if not counter:
        return _decimal(written)
    if plain.isdigit():
        value = int(plain)
        if counter == "월" and value in _MONTHS:
            return _MONTHS[value]
        if counter in NATIVE_COUNTERS and 1 <= value <= 99:
            return f"{native(value, before_counter=True)} {counter}"
    return f"{_decimal(written)} {counter}"


def normalize_korean(text: str) -> str:
    """Digits (with their counters) as Korean words; everything else unchanged."""
    text = text.translate(_FULLWIDTH)
    return NUMBER_RE.sub(lambda m: read_number(m["number"], m["counter"] or ""), text)
