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
    # "AM"/"PM": the G2P reads "a m" as the article "a" and drops a full stop after a lone letter.
    ("At 3:30pm.", "At three thirty PM."),
    ("At 15:45", "At fifteen forty five"),
    ("At 10:00", "At ten o'clock"),
    ("At 7:05 a.m. sharp", "At seven oh five AM sharp"),
    ("Meet at 9am.", "Meet at nine AM."),
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


# Bugs reported against the rules above; one table per area.
FIX_CASES = [
    # month names must be whole words or standard abbreviations
    ("Maybe 5 people will come.", "Maybe five people will come."),
    ("I played Super Mario 64 yesterday.", "I played Super Mario sixty four yesterday."),
    ("Marcus 2 scored", "Marcus two scored"),
    ("Octavia 3 points", "Octavia three points"),
    ("May 5", "May fifth"),
    ("Born Sept. 3, 1990", "Born September third nineteen ninety"),
    ("On March 3rd", "On March third"),
    # decades
    ("The 1800s", "The eighteen hundreds"),
    ("the 90s", "the nineties"),
    ("the '90s", "the nineties"),
    ("the 1990s", "the nineteen nineties"),
    ("In the 1960s-70s", "In the nineteen sixties to seventies"),
    ("In her 30s", "In her thirties"),
    ("the 2000s", "the two thousands"),
    ("10s of thousands", "tens of thousands"),
    ("the 50s and 60s", "the fifties and sixties"),
    ("a 30s clip", "a thirty seconds clip"),
    # "St." and sentence-final abbreviations
    ("She lives on Baker St. We visited her.", "She lives on Baker Street. We visited her."),
    ("I live on Baker St.", "I live on Baker Street."),
    ("Visit St. Louis today.", "Visit Saint Louis today."),
    ("Turn onto 5th St. Then stop.", "Turn onto fifth Street. Then stop."),
    ("Main St., Springfield", "Main Street, Springfield"),
    ("It closes at 5 p.m. We should hurry.", "It closes at five PM. We should hurry."),
    ("At 5 p.m. on Friday", "At five PM on Friday"),
    ("Cats, dogs, etc. Then we left.", "Cats, dogs, et cetera. Then we left."),
    ("Argentina vs. Brazil", "Argentina versus Brazil"),
    ("Apple Inc. It grew.", "Apple Incorporated. It grew."),
    # money
    ("Your balance is -$50 after the fee.", "Your balance is minus fifty dollars after the fee."),
    ("It is $-5", "It is minus five dollars"),
    ("Only US$5", "Only five US dollars"),
    ("Costs C$2.50", "Costs two Canadian dollars and fifty cents"),
    ("Pay $10-$20", "Pay ten to twenty dollars"),
    ("A $5-10 million fund", "A five to ten million dollars fund"),
    # scale suffixes
    ("1.5M users", "one point five million users"),
    ("A $5M grant", "A five million dollars grant"),
    ("A £1m deal", "A one million pounds deal"),
    ("$2.5B", "two point five billion dollars"),
    ("3bn people", "three billion people"),
    ("10k steps", "ten thousand steps"),
    ("2.5B parameters", "two point five billion parameters"),
    ("221B Baker Street", "221B Baker Street"),  # an address, not a billion (like "5G", left to the G2P)
    ("the 1,000th visitor", "the one thousandth visitor"),
    # acronyms that look like units
    ("We trained 3 ML models.", "We trained three ML models."),
    ("Add 5 ml or 5 mL", "Add five milliliters or five milliliters"),
    ("A 2 TB disk, 8 GB RAM", "A two terabytes disk, eight gigabytes RAM"),
    ("Ask 2 HR staff", "Ask two HR staff"),
    # phone numbers and leading zeros
    ("Call 555-123-4567", "Call five five five, one two three, four five six seven"),
    ("Call (555) 123-4567.", "Call five five five, one two three, four five six seven."),
    ("Dial +1 555 123 4567", "Dial plus one, five five five, one two three, four five six seven"),
    ("Call 1-800-555-1234", "Call one, eight zero zero, five five five, one two three four"),
    ("Call 555-1234", "Call five five five, one two three four"),
    ("Agent 007", "Agent zero zero seven"),
    ("Dial 0.5 or +5 10 20", "Dial zero point five or plus five ten twenty"),
    ("Boston MA 02134", "Boston MA zero two one three four"),
    # fractions and ranges
    ("1/2 cup", "one half cup"),
    ("3/4 full", "three quarters full"),
    ("2 1/2 hours", "two and a half hours"),
    ("2/3 of them", "two thirds of them"),
    ("½ cup, 2½ cups, ¼ and ¾", "one half cup, two and a half cups, one quarter and three quarters"),
    ("10-20 minutes", "ten to twenty minutes"),
    ("From 1990-1995", "From nineteen ninety to nineteen ninety five"),
    ("From 1990-95", "From nineteen ninety to ninety five"),
    ("Open 24/7", "Open twenty four seven"),
    ("Due 31/12/2023", "Due December thirty first twenty twenty three"),
    ("Walk 5-10 km", "Walk five to ten kilometers"),
    ("Open 9am-5pm", "Open nine AM to five PM"),
    ("Open 10:00-11:00", "Open ten o'clock to eleven o'clock"),
    ("Up 10-20%", "Up ten to twenty percent"),
    ("500-1000 users", "five hundred to one thousand users"),
    ("It is -5 degrees", "It is minus five degrees"),
    ("2+2=4", "two plus two equals four"),
    ("5-3=2", "five minus three equals two"),
    # Roman numerals
    ("Chapter IV", "Chapter four"),
    ("Louis XIV", "Louis the fourteenth"),
    ("World War II and World War I", "World War two and World War one"),
    ("Super Bowl LVIII", "Super Bowl fifty eight"),
    ("Henry VIII and Elizabeth II", "Henry the eighth and Elizabeth the second"),
    ("in part II", "in part two"),
    ("in this part I show", "in this part I show"),
    ("When Mary I was queen", "When Mary I was queen"),
    ("I mix MIX and CIVIL", "I mix MIX and CIVIL"),
    ("Class C and Type II", "Class C and Type two"),
    ("Malcolm X", "Malcolm X"),
    ("Louis XIV's palace", "Louis the fourteenth's palace"),
    ("Vol. IV and Apollo XI", "Volume four and Apollo eleven"),
    # minor
    ("At 10:05:30", "At ten oh five and thirty seconds"),
    ("At 0:00", "At zero hundred"),
    ("At 9.30am", "At nine thirty AM"),
    ("Only 1.0 km", "Only one point zero kilometers"),
    ("Learn C# and F#.", "Learn C sharp and F sharp."),
    ("A Ph.D. in physics", "A PhD in physics"),
    ("She has a Ph.D.", "She has a PhD."),
]


@pytest.mark.parametrize(("text", "expected"), FIX_CASES)
def test_normalize_english_fixes(text: str, expected: str) -> None:
    assert normalize_english(text) == expected


def test_no_digits_left_in_mixed_paragraph() -> None:
    text = "On 3/4/2025 at 10:15am, 2,500 people paid $12.75 each (15% off) to run 10 km in 45 min."
    out = normalize_english(text)
    assert not any(ch.isdigit() for ch in out), out


def test_cardinal_handles_separators_and_signs() -> None:
    assert cardinal("1,000") == "one thousand"
    assert cardinal("-2.05") == "minus two point zero five"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("€1.234,56", "one thousand two hundred and thirty four euros and fifty six cents"),
        ("€1,234.56", "one thousand two hundred and thirty four euros and fifty six cents"),  # English style too
        ("€3,50", "three euros and fifty cents"),  # the euro's locales write decimals with a comma
        ("€1.234", "one thousand two hundred and thirty four euros"),
        ("1.234,56 €", "one thousand two hundred and thirty four euros and fifty six cents"),
        ("It is 12,50€.", "It is twelve euros and fifty cents."),
        ("1.000.000 people", "one million people"),  # two dots: never a decimal
        ("The ratio is 1.234", "The ratio is one point two three four"),  # no euro: the English reading
    ],
)
def test_separators_follow_the_currency_or_the_number(text: str, expected: str) -> None:
    assert normalize_english(text) == expected
