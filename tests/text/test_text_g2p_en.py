"""English G2P details around misaki's tokens (real misaki and spaCy model)."""

from __future__ import annotations

import pytest

from voxserve.text.frontend import Frontend


def words(frontend: Frontend, text: str) -> list[tuple[str, str]]:
    return [(w.text, w.phonemes) for s in frontend.phonemize(text, "en-us") for w in s.words]


@pytest.mark.parametrize(
    ("text", "stops"),
    [
        ("Take vitamin C. We left early.", 2),  # the letter's period ends the first sentence
        ("The answer is B.", 1),
        ("Ask J. K. Rowling about it.", 1),  # initials keep no stop
    ],
)
def test_a_period_after_a_single_letter_is_kept_where_it_ends_a_sentence(
    frontend: Frontend, text: str, stops: int
) -> None:
    spoken = words(frontend, text)
    assert sum(phonemes == "." for _, phonemes in spoken) == stops, spoken


def test_extra_spaces_do_not_end_up_in_word_texts(frontend: Frontend) -> None:
    texts = [text for text, _ in words(frontend, "I love 😀  very  much.")]
    assert "very" in texts and all(text == text.strip() for text in texts), texts


def test_spacy_holds_only_the_tagger_misaki_reads_and_heteronyms_follow_it(frontend: Frontend) -> None:
    """The parser, NER and lemmatizer are left out of the pipeline, not loaded and disabled; the parts of
    speech still pick a heteronym's reading ("record" the verb against "record" the noun)."""
    from voxserve.text.g2p_en import SPACY_PIPES, load_spacy

    assert tuple(load_spacy().component_names) == SPACY_PIPES
    verb, noun = dict(words(frontend, "I will record it.")), dict(words(frontend, "The record is old."))
    assert verb["record"] != noun["record"], (verb, noun)
