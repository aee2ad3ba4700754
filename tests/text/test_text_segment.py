from __future__ import annotations

import random
import re

import pytest

from voxserve.text.segment import IncrementalSegmenter, TextSegment, count_words, split_sentences, split_text

PARAGRAPH = (
    "Sure, I can help with that. Dr. Smith paid $3.50 for 3.5 kg of apples, e.g. Fuji ones, at 9 a.m. yesterday. "
    "The U.S. economy grew by 2.5% last year, and analysts expect more growth. Is that right? Yes! "
    "Mr. J. K. Rowling wrote books, etc. Then she rested.\n"
    "This is a very long sentence without much punctuation that keeps going and going because the speaker never "
    "stops to breathe and it simply has to be cut somewhere at a word boundary because otherwise it would exceed "
    "the maximum number of characters allowed in a segment which is quite small here for testing purposes only, ok. "
    "今天天气很好，我们去公园散步吧。你觉得怎么样？好的！"
)


def llm_tokens(text: str, seed: int) -> list[str]:
    """Split like an LLM stream: pieces of 1-4 characters, spaces glued to the next word."""
    rng = random.Random(seed)
    pieces: list[str] = []
    i = 0
    while i < len(text):
        n = rng.randint(1, 4)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def feed(segmenter: IncrementalSegmenter, pieces: list[str]) -> tuple[list[TextSegment], list[int]]:
    out: list[TextSegment] = []
    when: list[int] = []
    for k, piece in enumerate(pieces):
        got = segmenter.push(piece)
        out.extend(got)
        when.extend([k] * len(got))
    out.extend(segmenter.flush())
    return out, when


@pytest.mark.parametrize("seed", range(5))
def test_token_by_token_equals_batch(seed: int) -> None:
    batch = split_text(PARAGRAPH, 6, 120)
    streamed, _ = feed(IncrementalSegmenter(6, 120), llm_tokens(PARAGRAPH, seed))
    assert streamed == batch
    chars, _ = feed(IncrementalSegmenter(6, 120), list(PARAGRAPH))
    assert chars == batch


def test_batch_segments_cover_the_text_and_respect_the_limit() -> None:
    segments = split_text(PARAGRAPH, 6, 120)
    assert re.sub(r"\s+", "", "".join(s.text for s in segments)) == re.sub(r"\s+", "", PARAGRAPH)
    assert all(len(s.text) <= 120 for s in segments)
    texts = [s.text for s in segments]
    assert texts[0] == "Sure, I can help with that."
    # abbreviations, initials and decimals never end a segment
    joined = "\n".join(texts)
    for fragment in ("Dr. Smith", "3.5 kg", "e.g. Fuji", "U.S. economy", "J. K. Rowling", "9 a.m. yesterday"):
        assert fragment in joined


def test_never_splits_inside_a_word_or_number() -> None:
    text = "Hello world 3.5 and 1,000,000 things supercalifragilistic " * 12
    pieces = [
        "Hel",
        "lo",
        " wor",
        "ld",
        " 3",
        ".",
        "5",
        " and",
        " 1",
        ",000",
        ",000",
        " things",
        " supercali",
        "fragilistic ",
    ]
    words = set(text.split())
    seg = IncrementalSegmenter(3, 60)
    out, _ = feed(seg, pieces * 12)
    for s in out:
        assert set(s.text.split()) <= words, s.text
    assert out == split_text(text, 3, 60)


def test_first_segment_is_short_at_a_clause() -> None:
    seg = IncrementalSegmenter(first_segment_words=4, max_segment_chars=400)
    out = seg.push("Well, I think that the answer, as far as I know, is yes. ")
    assert out[0] == TextSegment("Well, I think that the answer,", "clause")


def test_first_segment_hard_cut_without_punctuation() -> None:
    seg = IncrementalSegmenter(first_segment_words=3, max_segment_chars=400)
    out: list[TextSegment] = []
    for word in ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]:
        out += seg.push(word + " ")
    assert out and out[0].boundary == "none"
    assert out[0].text == "one two three four five six"


def test_segment_emitted_as_soon_as_sentence_is_confirmed() -> None:
    seg = IncrementalSegmenter(6, 400)
    assert seg.push("Hi there.") == []  # could still be "there.com" or "3.5"
    assert seg.push(" ") == [TextSegment("Hi there.", "sentence")]


def test_later_segments_grow_by_merging_sentences() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    segments = split_text(text, 6, 200)
    lengths = [len(s.text) for s in segments]
    assert lengths[0] < 40
    assert max(lengths) <= 200
    assert lengths[-2] > lengths[1]  # grows
    assert all(s.boundary == "sentence" for s in segments)


def test_long_sentence_split_at_clauses_then_words() -> None:
    clauses = ", ".join(["this clause has exactly seven words in it"] * 8) + "."
    segments = split_text("Start. " + clauses, 6, 100)
    assert all(len(s.text) <= 100 for s in segments)
    assert segments[1].boundary == "clause" and segments[1].text.endswith(",")
    no_punct = " ".join(["word"] * 80) + "."
    segments = split_text("Start. " + no_punct, 6, 100)
    assert all(len(s.text) <= 100 for s in segments)
    assert segments[1].boundary == "none"
    assert all(set(s.text.rstrip(".").split()) <= {"word", "Start"} for s in segments)


def test_cjk_punctuation_splits_sentences_and_clauses() -> None:
    out = split_sentences("你好！今天天气很好，我们去散步吧。好的？嗯；对")
    assert [s.text for s in out] == ["你好！", "今天天气很好，我们去散步吧。", "好的？", "嗯；对"]
    seg = IncrementalSegmenter(first_segment_words=2, max_segment_chars=400)
    got: list[TextSegment] = []
    for ch in "今天天气很好，我们去散步吧。":
        got += seg.push(ch)
    assert got == [TextSegment("今天天气很好，", "clause")]
    assert seg.flush() == [TextSegment("我们去散步吧。", "sentence")]


def test_japanese_punctuation() -> None:
    out = split_sentences("こんにちは。元気ですか？はい、元気です！")
    assert [s.text for s in out] == ["こんにちは。", "元気ですか？", "はい、元気です！"]


def test_inline_markup_is_never_split() -> None:
    text = "Say [New York, please](/nˈu jˈɔɹk/) now. Then stop."
    for first_words in (1, 6):
        out, _ = feed(IncrementalSegmenter(first_words, 400), list(text))
        assert any("[New York, please](/nˈu jˈɔɹk/)" in s.text for s in out), out
    assert split_text(text, 6, 400)[0].text == "Say [New York, please](/nˈu jˈɔɹk/) now."


def test_flush_resets_to_a_short_first_segment() -> None:
    seg = IncrementalSegmenter(2, 400)
    seg.push("One sentence here. Another one follows. ")
    seg.flush()
    assert seg.push("Hello there, friend, how are you? ") == [TextSegment("Hello there,", "clause")]


def test_newline_ends_a_sentence() -> None:
    assert [s.text for s in split_sentences("- first item\n- second item")] == ["- first item", "- second item"]


def test_count_words() -> None:
    assert count_words("hello there, world") == 3
    assert count_words("你好世界") == 2


def _both_ways(text: str, first_words: int = 6, max_chars: int = 400) -> list[TextSegment]:
    """Whole-text segments, checked to equal those of the same text streamed word by word."""
    batch = split_text(text, first_words, max_chars)
    words = re.findall(r"\S+\s*", text)
    streamed, _ = feed(IncrementalSegmenter(first_words, max_chars), words)
    assert streamed == batch
    chars, _ = feed(IncrementalSegmenter(first_words, max_chars), list(text))
    assert chars == batch
    return batch


@pytest.mark.parametrize(
    ("text", "together"),
    [
        ("The city council agreed today that the new bridge will cost $5 million in total.", "$5 million"),
        ("The weather service said today that the reading at noon of 72 °F was a record.", "72 °F"),
        ("The runners in the big city race said that the first 5 km is the hardest part.", "5 km"),
    ],
)
def test_first_segment_never_cut_right_after_a_number(text: str, together: str) -> None:
    segments = _both_ways(text)
    assert len(segments) == 2 and segments[0].boundary == "none"
    assert together in segments[0].text


def test_long_cut_prefers_a_word_boundary_not_after_a_number() -> None:
    text = "Start. " + " ".join(["cost $5 million"] * 30) + "."
    segments = _both_ways(text, 6, 100)
    assert all(len(s.text) <= 100 for s in segments)
    assert all(not re.search(r"\d$", s.text) for s in segments)


def test_only_numbers_still_cut_at_a_space() -> None:
    segments = _both_ways("Start. " + " ".join(str(n) for n in range(100, 200)) + ".", 6, 100)
    assert all(len(s.text) <= 100 for s in segments)
    assert all(set(s.text.rstrip(".").split()) <= {"Start"} | {str(n) for n in range(100, 200)} for s in segments)


def test_degree_abbreviation_is_not_a_sentence_end() -> None:
    assert [s.text for s in split_sentences("She has a Ph.D. in math. He has an M.Sc. too.")] == [
        "She has a Ph.D. in math.",
        "He has an M.Sc. too.",
    ]


def test_list_numbers_belong_to_their_line() -> None:
    text = "Steps:\n1. First item\n2. Second item\n3. Third item"
    assert [s.text for s in split_sentences(text)] == ["Steps:", "1. First item", "2. Second item", "3. Third item"]
    segments = _both_ways(text, 2, 400)
    assert [s.text for s in segments] == ["Steps:", "1. First item 2. Second item", "3. Third item"]
    # A number at the end of a sentence in running text still ends it.
    assert [s.text for s in split_sentences("I counted to 2. Then I stopped.")] == [
        "I counted to 2.",
        "Then I stopped.",
    ]
    # After a segment is taken mid-line, the next "N." is not at a line start (a small limit keeps
    # the later sentences apart).
    assert [s.text for s in _both_ways("Hi. 3. Then go.", 1, 20)] == ["Hi.", "3.", "Then go."]
    assert [s.text for s in _both_ways("Hi.\n3. Then go.", 1, 20)] == ["Hi.", "3. Then go."]
    assert [s.text for s in _both_ways("Hi.\n \n 3. Then go.", 1, 20)] == ["Hi.", "3. Then go."]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("We met at 5 p.m. We ate.", ["We met at 5 p.m.", "We ate."]),
        ("Bring pens, paper, etc. Then sit.", ["Bring pens, paper, etc.", "Then sit."]),
        ("It is on Main St. We live there.", ["It is on Main St.", "We live there."]),
        ("He moved to the U.S. He liked it.", ["He moved to the U.S.", "He liked it."]),
        ("We met at 9 a.m. yesterday.", ["We met at 9 a.m. yesterday."]),
        ("I flew to St. Louis and the U.S. Army base.", ["I flew to St. Louis and the U.S. Army base."]),
        ("Dr. We and Mr. The are odd names. Prof. Then too.", ["Dr. We and Mr. The are odd names.", "Prof. Then too."]),
        ("See e.g. Fuji apples.", ["See e.g. Fuji apples."]),
    ],
)
def test_abbreviation_sentence_ends(text: str, sentences: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == sentences
    _both_ways(text, 1, 400)


@pytest.mark.parametrize(
    "unit",
    [
        "Sentence number 12 is here to make the text long enough to matter. ",
        "A long clause without an end, and another one after it; ",
        "这是一个很长的句子没有标点",
    ],
)
def test_a_long_input_is_scanned_a_bounded_number_of_times(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The work grows with the text's length, not its square: every character is looked at a few
    times, however long the input (a 100,000-character request used to block the server a minute)."""
    import voxserve.text.segment as segment

    scanned = 0
    original = segment.scan

    def counting(buf: str, final: bool, line_start: bool = True) -> list:
        nonlocal scanned
        scanned += len(buf)
        return original(buf, final, line_start)

    monkeypatch.setattr(segment, "scan", counting)
    for repeats in (50, 800):
        scanned = 0
        text = unit * repeats
        pieces = split_text(text)
        assert "".join(p.text for p in pieces).replace(" ", "") == text.replace(" ", "")
        assert scanned <= 6 * len(text), (repeats, scanned / len(text))


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("I met Dr.", True),
        ("Take the medicine, e.g.", True),
        ("Written by J.", True),
        ("Steps:\n2.", True),
        ("I met the doctor.", False),
        ("It costs 3.", False),  # a sentence's end or a decimal point: the quiet spell settles it
        ("We live on Main St.", False),  # a street's end ends sentences too
        ("Wait...", False),
        ("Done!", False),
    ],
)
def test_a_period_that_ends_no_sentence_is_told_apart_at_the_end_of_the_buffer(text: str, held: bool) -> None:
    """The session's idle flush speaks buffered text that ends a sentence after a quiet spell; "I met Dr."
    is never such text, however long the stream pauses."""
    segmenter = IncrementalSegmenter()
    segmenter.push(text)
    assert segmenter.ends_in_abbreviation() is held
