"""English normalizer rules for words: abbreviations, titles, "St.", note names and Roman numerals."""

from __future__ import annotations

import re
from collections.abc import Callable

from voxserve.text.dates_en import sentence_follows
from voxserve.text.numbers_en import ordinal, roman, words

_TITLES = {
    "dr": "Doctor",
    "mr": "Mister",
    "mrs": "Missus",
    "ms": "Miz",
    "prof": "Professor",
    "jr": "Junior",
    "sr": "Senior",
    "gen": "General",
    "capt": "Captain",
    "sgt": "Sergeant",
    "rev": "Reverend",
}
_ABBREVIATIONS = {
    "e.g.": "for example",
    "i.e.": "that is",
    "vs.": "versus",
    "approx.": "approximately",
    "etc.": "et cetera",
    "inc.": "Incorporated",
    "ltd.": "Limited",
    "dept.": "department",
    "est.": "established",
}
# Abbreviations that often end a sentence ("…, etc. Then"); as periods.py does (_MAYBE_ABBREV).
_SENTENCE_FINAL = {"etc.", "inc.", "ltd."}

# Words after which a Roman numeral is a cardinal number ("Chapter IV" → "Chapter four").
_COUNTED = (
    "Chapter", "Part", "Volume", "Book", "Act", "Scene", "Section", "Phase", "Stage", "Season", "Episode",
    "Article", "Title", "Type", "Class", "Level", "Round",
)  # fmt: skip
_COUNTED_RE = "|".join([*_COUNTED, *(w.lower() for w in _COUNTED), "Vol\\.", "Super Bowl", "World War", "Apollo"])
# Regnal names, after which a Roman numeral is an ordinal ("Louis XIV" → "Louis the fourteenth"). A list rather
# than any capitalized word, since "Final Fantasy VII", "Rocky II" or "Malcolm X" are not read that way.
_REGNAL = (
    "Alexander", "Alfonso", "Amenhotep", "Anne", "Benedict", "Boniface", "Catherine", "Charles", "Christian",
    "Clement", "Constantine", "Darius", "David", "Edward", "Elizabeth", "Ferdinand", "Francis", "Frederick",
    "George", "Gregory", "Gustav", "Harald", "Henry", "Innocent", "Isabella", "Ivan", "James", "John", "Joseph",
    "Julius", "Leo", "Leopold", "Louis", "Mary", "Napoleon", "Nicholas", "Olaf", "Otto", "Paul", "Peter", "Philip",
    "Pius", "Ptolemy", "Ramesses", "Richard", "Robert", "Rudolf", "Sixtus", "Stephen", "Urban", "Wilhelm", "William",
)  # fmt: skip


def _street_name_before(before: str) -> bool:
    """Whether the word before "St." names a street: a number ("5th St.") or a capitalized word that does not
    just start the sentence ("Baker St." but not "Visit St. Louis")."""
    match = re.search(r"(\S+)\s+$", before)
    if match is None:
        return False
    word = match.group(1)
    if word[0].isdigit():
        return True
    if not word[0].isupper():
        return False
    head = before[: match.start(1)].rstrip()
    return head != "" and head[-1] not in '.!?:;"“('


def saint_or_street(match: re.Match[str]) -> str:
    before, after = match.string[: match.start()], match.string[match.end() :]
    if re.match(r"\s*[A-Z]", after) and not _street_name_before(before):
        return "Saint "  # "St. Louis"; the doubled space is collapsed at the end
    # "Baker St. We visited her.": the abbreviation's dot is also the sentence's full stop.
    return "Street" + ("." if sentence_follows(match) else "")


def _title(match: re.Match[str]) -> str:
    return _TITLES[match.group(1).lower()] + " "


def _abbreviation(match: re.Match[str]) -> str:
    key = match.group(1).lower()
    rest = match.string[match.end() :]
    ends = rest.strip() == "" or (key in _SENTENCE_FINAL and sentence_follows(match))
    return _ABBREVIATIONS[key] + ("." if ends else "")


def _doctorate(match: re.Match[str]) -> str:
    # "PhD", not "P H D": the G2P drops a full stop after a single-letter word.
    return "PhD" + ("." if match.group(0).endswith(".") and sentence_follows(match) else "")


def _counted_roman(match: re.Match[str]) -> str:
    keyword, numeral = match["kw"], match["num"]
    value = roman(numeral)
    # A lone "I" after a lower-case word is the pronoun ("in this part I show"); lone L/C/D/M are labels.
    if value is None or (numeral == "I" and keyword[0].islower()) or numeral in ("L", "C"):
        return match.group(0)
    return f"{'Volume' if keyword == 'Vol.' else keyword} {words(value)}"


def _regnal_roman(match: re.Match[str]) -> str:
    value = roman(match["num"])
    if value is None:
        return match.group(0)
    return f"{match['name']} the {ordinal(value)}"


SAINT_STREET_RE = re.compile(r"\b(?:St|ST|st)\.")

WORD_RULES: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|Jr|Sr|Gen|Capt|Sgt|Rev)\.\s*(?=[A-Z])"), _title),
    (
        re.compile(r"(?<![\w.])(e\.g\.|i\.e\.|vs\.|approx\.|etc\.|inc\.|ltd\.|dept\.|est\.)", re.IGNORECASE),
        _abbreviation,
    ),
    (re.compile(r"\bPh\.\s?D\b\.?"), _doctorate),
    (re.compile(r"(?<![\w#])([A-G])#(?![\w#])"), r"\1 sharp"),  # "C#", "F#"
    (re.compile(rf"\b(?P<kw>{_COUNTED_RE})\s+(?P<num>[IVXLC]+)\b(?!['’](?!s\b)\w)"), _counted_roman),
    # Never a lone "I" after a name: in "when Mary I was told" it is the pronoun.
    (re.compile(rf"\b(?P<name>{'|'.join(_REGNAL)})\s+(?P<num>[IVX]{{2,}}|V|X)\b(?!['’](?!s\b)\w)"), _regnal_roman),
]
