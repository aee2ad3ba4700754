from __future__ import annotations

import pytest

from voxserve.text.normalize_en import cardinal, normalize_english

CASES = [
    # numbers
    ("I have 42 apples.", "I have forty two apples."),
    ("It is 3.14 wide.", "It is three point one four wide."),
    ("It was -5 outside.", "It was minus five outside."),
    (
        "About 1,234,567 people.",
        "About one million two hundred and thirty four thousand five hundred and sixty seven people.",
    ),
    ("In 1999 and 2024.", "In nineteen ninety nine and twenty twenty four."),
    ("Only 0.5 left", "Only zero point five left"),
    # money
    ("It costs $5.50.", "It costs five dollars and fifty cents."),
    ("Pay €3 now", "Pay three euros now"),
    ("Rent is £1,200.", "Rent is one thousand two hundred pounds."),
    ("Just 5¢", "Just five cents"),
    ("Only $1", "Only one dollar"),
    ("A $2.5 million deal", "A two point five million dollars deal"),
    ("Just $0.99", "Just ninety nine cents"),
    # dates
    ("Due 12/25/2024.", "Due December twenty fifth twenty twenty four."),
    ("Due 2024-12-25.", "Due December twenty fifth twenty twenty four."),
    ("Due Dec. 25", "Due December twenty fifth"),
    ("On Jan 1, 2000", "On January first two thousand"),
    # times
    ("At 3:30pm.", "At three thirty p m."),
    ("At 15:45", "At fifteen forty five"),
    ("At 10:00", "At ten o'clock"),
    ("At 7:05 a.m. sharp", "At seven oh five a m sharp"),
    ("Meet at 9am.", "Meet at nine a m."),
    # ordinals and percentages
    ("The 1st and 22nd", "The first and twenty second"),
    ("Up 45% or 3.5%", "Up forty five percent or three point five percent"),
    # units
    ("Drive 60 mph", "Drive sixty miles per hour"),
    ("Walk 5 km or 1km", "Walk five kilometers or one kilometer"),
    ("It is 20°C or 70 °F", "It is twenty degrees Celsius or seventy degrees Fahrenheit"),
    ("A 16 GB disk, 250 ms later", "A sixteen gigabytes disk, two hundred and fifty milliseconds later"),
    ("At 15 km/h", "At fifteen kilometers per hour"),
    ("A 5G network", "A 5G network"),
    # links
    ("See https://www.example.com/docs now", "See example dot com slash docs now"),
    ("See example.com.", "See example dot com."),
    ("Mail john.doe@example.org", "Mail john dot doe at example dot org"),
    # abbreviations
    ("Dr. Smith and Mr. Jones", "Doctor Smith and Mister Jones"),
    ("Main St. is near St. Louis", "Main Street is near Saint Louis"),
    ("Fruit, e.g. apples, i.e. food", "Fruit, for example apples, that is food"),
    ("Cats, dogs, etc.", "Cats, dogs, et cetera."),
    ("Red vs. blue", "Red versus blue"),
    ("No. 5 and #3", "number five and number three"),
    # symbols and acronyms
    ("A & B @ home", "A and B at home"),
    ("1 + 2 = 3", "one plus two equals three"),
    ("NASA and the FBI", "NASA and the FBI"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_normalize_english(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


def test_no_digits_left_in_mixed_paragraph() -> None:
    text = "On 3/4/2025 at 10:15am, 2,500 people paid $12.75 each (15% off) to run 10 km in 45 min."
    out = normalize_english(text)
    assert not any(ch.isdigit() for ch in out), out


def test_cardinal_handles_separators_and_signs() -> None:
    assert cardinal("1,000") == "one thousand"
    assert cardinal("-2.05") == "minus two point zero five"
