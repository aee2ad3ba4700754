"""An SSML subset, turned into the plain text (with inline ``[word](/phonemes/)`` spans) the frontend reads.

Supported: ``<speak>``, ``<p>``/``<s>`` (sentence ends), ``<break time strength>`` (a clause pause up to
400 ms, a sentence pause beyond), ``<say-as interpret-as="characters|spell-out|cardinal|ordinal|date|
telephone">``, ``<phoneme alphabet="ipa" ph>``, ``<sub alias>`` and ``<prosody rate>`` (the first one sets
the whole utterance's speed). Any other element is read as its text content, never as markup. A
document that is not well-formed XML is refused, naming the problem and where.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from num2words import num2words

from voxserve.errors import InvalidInput
from voxserve.limits import check_ssml_depth
from voxserve.text.clean import check_digits

_RATES = {"x-slow": 0.6, "slow": 0.8, "medium": 1.0, "fast": 1.25, "x-fast": 1.5}
_STRONG = {"strong", "x-strong"}
_STRENGTHS = {"none", "x-weak", "weak", "medium", *_STRONG}
_SENTENCE_END = ".!?…。！？"
_SPEAK = re.compile(r"(<\?xml[^>]{0,200}\?>\s*)?<speak[\s>/]", re.IGNORECASE)


@dataclass(frozen=True)
class SsmlText:
    """A document's text as the frontend reads it, and the speed its ``<prosody rate>`` asks (or None)."""

    text: str
    speed: float | None


def looks_like_ssml(text: str) -> bool:
    """Whether ``text`` is an SSML document: it starts with a ``<speak`` element, in any case, or with an XML
    declaration and then one."""
    return _SPEAK.match(text.lstrip()) is not None


def ssml_to_text(document: str) -> SsmlText:
    try:
        root = ET.fromstring(document.strip())
    except ET.ParseError as exc:
        raise InvalidInput(f"malformed SSML: {exc}") from None
    if _tag(root) != "speak":
        raise InvalidInput(f"SSML must have <speak> as its root element, not <{_tag(root)}>")
    check_ssml_depth(_depth(root))
    reader = _Reader()
    reader.element(root)
    text = re.sub(r"\s+", " ", "".join(reader.out)).strip()
    if not any(ch.isalnum() for ch in text):
        raise InvalidInput("the SSML document has no text to speak")
    return SsmlText(text, reader.speed)


def _depth(root: ET.Element) -> int:
    """How deep elements nest under ``root`` (1: none), found without recursion."""
    deepest, level = 1, [(root, 1)]
    while level:
        element, depth = level.pop()
        deepest = max(deepest, depth)
        level.extend((child, depth + 1) for child in element)
    return deepest


def _tag(element: ET.Element) -> str:
    return element.tag.rsplit("}", 1)[-1].lower()  # without a namespace


class _Reader:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.speed: float | None = None

    def element(self, element: ET.Element) -> None:
        handlers = {
            "p": self.sentence,
            "s": self.sentence,
            "break": self.pause,
            "say-as": self.say_as,
            "phoneme": self.phoneme,
            "sub": self.sub,
            "prosody": self.prosody,
        }
        handlers.get(_tag(element), self.children)(element)  # any other element: its text content
        if element.tail:
            self.out.append(element.tail)

    def children(self, element: ET.Element) -> None:
        if element.text:
            self.out.append(element.text)
        for child in element:
            self.element(child)

    def content(self, element: ET.Element) -> str:
        return "".join(element.itertext()).strip()

    def end_sentence(self) -> None:
        so_far = "".join(self.out).rstrip()
        if so_far and so_far[-1] not in _SENTENCE_END:
            self.out.append(".")
        self.out.append(" ")

    def sentence(self, element: ET.Element) -> None:
        self.end_sentence()
        self.children(element)
        self.end_sentence()

    def pause(self, element: ET.Element) -> None:
        time, strength = element.get("time"), element.get("strength")
        if strength is not None and strength not in _STRENGTHS:
            raise InvalidInput(f"SSML <break strength={strength!r}>: use one of {', '.join(sorted(_STRENGTHS))}")
        if strength == "none" and time is None:
            return  # no pause
        long = strength in _STRONG
        if time is not None:
            found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s)\s*", time)
            if found is None:
                raise InvalidInput(f"SSML <break time={time!r}>: use a duration such as '500ms' or '1s'")
            long = float(found.group(1)) * (1.0 if found.group(2) == "ms" else 1000.0) > 400
        if long:
            self.end_sentence()
        else:
            self.out.append(", ")

    def say_as(self, element: ET.Element) -> None:
        kind = (element.get("interpret-as") or "").lower()
        text = self.content(element)
        if kind in ("characters", "spell-out"):
            self.out.append(" " + " ".join(ch for ch in text if not ch.isspace()) + " ")
        elif kind in ("cardinal", "ordinal"):
            digits = text.replace(",", "")
            if not re.fullmatch(r"-?\d+", digits):
                raise InvalidInput(f"SSML <say-as interpret-as={kind!r}> needs a whole number, got {text[:40]!r}")
            check_digits(len(digits.lstrip("-")))  # before int(): its cost grows with the square of the digits
            self.out.append(num2words(int(digits), to="ordinal" if kind == "ordinal" else "cardinal"))
        elif kind in ("date", "telephone"):
            self.out.append(text)  # the English normalizer reads dates and phone numbers
        else:
            raise InvalidInput(
                f"SSML <say-as interpret-as={kind!r}> is not supported; "
                "use characters, cardinal, ordinal, date or telephone"
            )

    def phoneme(self, element: ET.Element) -> None:
        alphabet, ph = (element.get("alphabet") or "ipa").lower(), element.get("ph")
        if alphabet != "ipa":
            raise InvalidInput(f"SSML <phoneme alphabet={alphabet!r}> is not supported; use 'ipa'")
        if not ph or any(ch in ph for ch in "()/[]\n"):
            raise InvalidInput("SSML <phoneme> needs a 'ph' attribute without ( ) / [ ] or line breaks")
        word = self.content(element).replace("[", "").replace("]", "") or "word"
        self.out.append(f"[{word[:100]}](/{ph}/)")

    def sub(self, element: ET.Element) -> None:
        alias = element.get("alias")
        if alias is None:
            raise InvalidInput("SSML <sub> needs an 'alias' attribute")
        self.out.append(alias)

    def prosody(self, element: ET.Element) -> None:
        rate = element.get("rate")
        if rate is not None and self.speed is None:
            self.speed = _rate(rate)
        self.children(element)


def _rate(rate: str) -> float:
    value = rate.strip().lower()
    if value in _RATES:
        return _RATES[value]
    found = re.fullmatch(r"(\d+(?:\.\d+)?)%", value)
    if found is None:
        raise InvalidInput(f"SSML <prosody rate={rate!r}>: use x-slow … x-fast or a percentage such as '120%'")
    return float(found.group(1)) / 100.0
