"""Voice blend specs: malformed weights are refused with what the caller sent, never a parsed NaN."""

from __future__ import annotations

import pytest

from voxserve.engines.voices import parse_blend


@pytest.mark.parametrize(
    ("spec", "sent"),
    [
        ("af_heart:inf+af_bella:1", "'inf'"),  # was accepted: weights became [nan, 0.0]
        ("af_heart:nan", "'nan'"),
        ("af_heart:-1", "'-1'"),
        ("af_heart:1e-400", "'1e-400'"),
    ],
)
def test_bad_weights_are_refused_quoting_the_text_sent(spec: str, sent: str) -> None:
    with pytest.raises(ValueError, match="finite positive") as info:
        parse_blend(spec)
    assert sent in str(info.value)


def test_weights_that_overflow_their_sum_are_refused() -> None:
    with pytest.raises(ValueError, match="too large"):
        parse_blend("af_heart:1e308+af_bella:1e308")  # was accepted: both weights became 0.0


def test_good_blends_are_normalized() -> None:
    assert parse_blend("af_heart:3+af_bella:1") == [("af_heart", 0.75), ("af_bella", 0.25)]
    assert parse_blend("af_heart:1e-320+af_bella:1e-320") == [("af_heart", 0.5), ("af_bella", 0.5)]
