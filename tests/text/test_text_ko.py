"""Korean numbers: Sino-Korean or native by the counter, read before espeak-ng's Korean voice."""

from __future__ import annotations

import pytest

from voxserve.text.frontend import Frontend
from voxserve.text.normalize_ko import native, normalize_korean, sino


@pytest.mark.parametrize(
    ("n", "expected"),
    [(0, "영"), (10, "십"), (11, "십일"), (105, "백오"), (1100, "천백"), (2024, "이천이십사"), (10_000, "만"),
     (35_000, "삼만오천"), (100_000_000, "일억"), (120_000_000, "일억이천만")],
)  # fmt: skip
def test_sino_korean(n: int, expected: str) -> None:
    assert sino(n) == expected


def test_native_korean() -> None:
    assert [native(n) for n in (1, 2, 3, 4, 10, 20, 21, 99)] == [
        "하나", "둘", "셋", "넷", "열", "스물", "스물하나", "아흔아홉"
    ]  # fmt: skip
    assert [native(n, before_counter=True) for n in (1, 2, 3, 4, 20, 21)] == ["한", "두", "세", "네", "스무", "스물한"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("사과 3개 주세요.", "사과 세 개 주세요."),  # native before things
        ("학생 2명이 왔어요.", "학생 두 명이 왔어요."),
        ("5시 30분에 만나요.", "다섯 시 삼십 분에 만나요."),  # hours native, minutes Sino
        ("20살이에요.", "스무 살이에요."),
        ("150개", "백오십 개"),  # beyond 99: Sino-Korean
        ("2024년 3월 5일", "이천이십사 년 삼 월 오 일"),
        ("6월 10일, 10월", "유월 십 일, 시월"),
        ("1,500원입니다", "천오백 원입니다"),
        ("3.5킬로", "삼점오 킬로"),
        ("50%", "오십 퍼센트"),
        ("번호는 1234", "번호는 천이백삼십사"),
        ("３개", "세 개"),  # full-width digits
    ],
)
def test_numbers_with_counters(text: str, expected: str) -> None:
    assert normalize_korean(text) == expected


def test_korean_reaches_espeak_as_words(frontend: Frontend) -> None:
    segment = frontend.phonemize("사과 3개 주세요.", "ko", "espeak")[0]
    assert [w.text for w in segment.words][:3] == ["사과", "세", "개"]
    assert segment.phonemes.startswith("sˈɐqwɐ sˈe ɡˈɛ")  # 세 개, not 삼 개
