"""The SSML subset (voxserve.text.ssml): what each element becomes, and clear refusals."""

from __future__ import annotations

import pytest

from voxserve.errors import InvalidInput
from voxserve.text.ssml import looks_like_ssml, ssml_to_text


@pytest.mark.parametrize(
    ("document", "text"),
    [
        ("<speak>Hello <break time='300ms'/>there</speak>", "Hello , there"),
        ("<speak>Hello<break time='1s'/>there</speak>", "Hello. there"),
        ('<speak>Hello<break strength="strong"/>there</speak>', "Hello. there"),
        ('<speak>Hello <break strength="none"/>there</speak>', "Hello there"),
        ('<speak>Code <say-as interpret-as="characters">AB1</say-as> now</speak>', "Code A B 1 now"),
        ('<speak>The <say-as interpret-as="ordinal">21</say-as> time</speak>', "The twenty-first time"),
        ('<speak><say-as interpret-as="cardinal">1,204</say-as></speak>', "one thousand, two hundred and four"),
        ('<speak>On <say-as interpret-as="date">2024-01-05</say-as></speak>', "On 2024-01-05"),
        ('<speak>Say <phoneme alphabet="ipa" ph="təmˈɑːtoʊ">tomato</phoneme></speak>', "Say [tomato](/təmˈɑːtoʊ/)"),
        ('<speak><sub alias="World Wide Web">WWW</sub> site</speak>', "World Wide Web site"),
        ("<speak><p>One</p><p><s>Two</s><s>Three!</s></p></speak>", "One. Two. Three!"),
        (
            '<speak xmlns="http://www.w3.org/2001/10/synthesis">'
            '<voice name="x"><emphasis>Loud</emphasis></voice></speak>',
            "Loud",
        ),
    ],
)
def test_elements(document: str, text: str) -> None:
    assert ssml_to_text(document).text == text


def test_prosody_rate_sets_the_speed() -> None:
    assert ssml_to_text('<speak><prosody rate="slow">Slowly</prosody></speak>').speed == 0.8
    assert ssml_to_text('<speak><prosody rate="120%">Quick</prosody></speak>').speed == 1.2
    assert ssml_to_text("<speak>Plain</speak>").speed is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("<speak>Hello <break time='1s'>", "malformed SSML: .*line 1"),
        ("<voice>Hello</voice>", "<speak> as its root"),
        ('<speak><break time="soon"/>x</speak>', "break time='soon'"),
        ('<speak><say-as interpret-as="ordinal">first</say-as></speak>', "needs a whole number"),
        ('<speak><say-as interpret-as="currency">5</say-as></speak>', "not supported"),
        ('<speak><phoneme alphabet="x-sampa" ph="a">a</phoneme></speak>', "use 'ipa'"),
        ("<speak><sub>WWW</sub></speak>", "needs an 'alias'"),
        ('<speak><prosody rate="warp">x</prosody></speak>', "prosody rate='warp'"),
        ("<speak> <break/> </speak>", "no text to speak"),
        ('<speak>a<break strength="bogus"/>b</speak>', "break strength='bogus'.*x-strong"),
        ("<speak>" + "<p>" * 2000 + "x" + "</p>" * 2000 + "</speak>", "nested 2001 deep; the limit is 64"),
        ("<speak>" + '<prosody rate="fast">' * 500 + "x" + "</prosody>" * 500 + "</speak>", "nested 501 deep"),
    ],
)
def test_refusals_name_the_problem(document: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        ssml_to_text(document)


def test_a_document_nested_to_the_limit_is_read() -> None:
    assert ssml_to_text("<speak>" + "<s>" * 63 + "Deep" + "</s>" * 63 + "</speak>").text == "Deep."


def test_detection() -> None:
    assert looks_like_ssml("  <speak>Hi</speak>") and not looks_like_ssml("I <3 speakers")
    assert looks_like_ssml('<SPEAK xml:lang="en">Hi</SPEAK>') and looks_like_ssml("<speak/>")
    assert not looks_like_ssml("<speaker>Hi</speaker>")
    assert looks_like_ssml('<?xml version="1.0"?>\n<speak>Hi</speak>')
    assert ssml_to_text("<SPEAK>Upper<BREAK time='1s'/>case.</SPEAK>").text == "Upper. case."
