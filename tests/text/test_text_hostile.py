"""Hostile text found by users and fuzzing: long numbers, misaki's log flood. Each test failed before its fix."""

from __future__ import annotations

import logging

import pytest

from voxserve.errors import InvalidInput
from voxserve.text import Frontend
from voxserve.text.clean import MAX_DIGITS
from voxserve.text.normalize_en import normalize_english


@pytest.mark.parametrize("text", ["1" * 307, "Hello there " + "9" * 400, "1" * 5000, "$" + "1" * 400, "1." + "5" * 101])
def test_a_number_too_long_to_read_is_refused_cleanly(frontend: Frontend, text: str) -> None:
    """307+ digits overflowed num2words (OverflowError → HTTP 500); now a clear InvalidInput (400)."""
    with pytest.raises(InvalidInput, match="too long to read aloud"):
        frontend.phonemize(text, "en-us")


@pytest.mark.parametrize("lang", ["en-us", "ja", "zh", "fr"])
def test_grouped_numbers_past_the_limit_are_refused_before_parsing(frontend: Frontend, lang: str) -> None:
    # 34 groups of three: int() of it would work, but the reading would run to hundreds of words
    with pytest.raises(InvalidInput, match=f"more than {MAX_DIGITS} digits"):
        frontend.phonemize("1" + ",000" * 34, lang)
    # 30,000 digits (Python's int() refuses past 4,300: ValueError), in Arabic-Indic digits too
    for digit in ("1", "٣"):
        with pytest.raises(InvalidInput):
            frontend.phonemize(digit * 30_000, lang)


def test_chinese_reads_other_scripts_digits() -> None:
    """misaki's Chinese rules match any Unicode digit but only know 0-9: "٣" raised KeyError."""
    from voxserve.text.normalize_zh import ChineseNormalizer

    assert ChineseNormalizer()("我有٣个苹果") == ChineseNormalizer()("我有3个苹果")


def test_numbers_of_16_to_100_digits_are_read_digit_by_digit() -> None:
    assert normalize_english("123456789012345").startswith("one hundred and twenty three trillion")
    assert normalize_english("1234567890123456") == "one two three four five six seven eight nine zero " + (
        "one two three four five six"
    )
    assert normalize_english("-1" + "0" * 20).startswith("minus one zero zero")
    spoken = normalize_english("7" * MAX_DIGITS)
    assert spoken.split() == ["seven"] * MAX_DIGITS


def test_misaki_fallback_logs_no_word_count_warnings(
    frontend: Frontend, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """Out-of-lexicon words with a hyphen or dot made phonemizer warn 'words count mismatch' on each one
    (through its own stderr handler, so the output is checked as well as the log records)."""
    caplog.set_level(logging.DEBUG)
    segments = frontend.phonemize("xkcd123abc 3rd-party q.e.d.", "en-us")
    assert segments
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == [], [r.getMessage() for r in loud]
    assert "mismatch" not in capfd.readouterr().err
