"""The fake engine the unit tier runs on: deterministic, as long as its phonemes, windowed, cancellable."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from voxserve.engines.base import Engine
from voxserve.engines.fake import FakeEngine
from voxserve.engines.onnx import RunControl
from voxserve.errors import Cancelled, InvalidInput, UnknownVoice

VOICE = "en_US-fake-low"
PHONEMES = "hɛlˈoʊ ðɛɹ, haʊ ɑːɹ juː tədˈeɪ?"


def test_it_is_an_engine_and_says_the_same_thing_twice() -> None:
    engine = FakeEngine()
    assert isinstance(engine, Engine)
    first, again = engine.synthesize(PHONEMES, VOICE), engine.synthesize(PHONEMES, VOICE)
    assert np.array_equal(first.samples, again.samples)
    assert not np.array_equal(first.samples, engine.synthesize(PHONEMES, "en_US-fake-high").samples)


def test_its_length_follows_the_phonemes_and_the_speed() -> None:
    engine = FakeEngine()
    one = len(engine.synthesize("ab", VOICE).samples)
    assert len(engine.synthesize("abcd", VOICE).samples) == 2 * one
    assert len(engine.synthesize("abcd", VOICE, speed=2.0).samples) == one
    audio = engine.synthesize(PHONEMES, VOICE)
    assert audio.phoneme_durations is not None and audio.phoneme_durations.sum() == len(audio.samples)


def test_windows_join_into_the_whole_sentence_and_follow_the_asked_sizes() -> None:
    engine = FakeEngine()
    whole = engine.synthesize(PHONEMES * 3, VOICE).samples
    sizes = iter([0.5, 1.0, 1.0, 1.0])
    pieces = list(engine.stream(PHONEMES * 3, VOICE, first_window_s=0.2, next_window_s=lambda: next(sizes, None)))
    assert np.array_equal(np.concatenate([p.samples for p in pieces]), whole)
    assert [p.first for p in pieces] == [True] + [False] * (len(pieces) - 1) and pieces[-1].last
    seconds = [len(p.samples) / engine.sample_rate for p in pieces]
    assert seconds[:3] == pytest.approx([0.2, 0.5, 1.0])
    assert engine.window_cost.fit() is not None  # windows of several sizes teach the cost fit


def test_a_blend_is_between_its_voices_and_bad_voices_and_input_are_refused() -> None:
    engine = FakeEngine()
    engine.check_voice("en_US-fake-low:0.5+en_US-fake-high:0.5")
    with pytest.raises(UnknownVoice):
        engine.check_voice("af_heart")
    with pytest.raises(InvalidInput, match="speed"):
        engine.synthesize(PHONEMES, VOICE, speed=3.0)
    with pytest.raises(InvalidInput, match="empty"):
        engine.synthesize("  ", VOICE)


def test_cancel_stops_the_call_in_flight() -> None:
    engine = FakeEngine(audio_s=10.0)  # a window of a second of audio takes ten
    control = RunControl()
    threading.Timer(0.2, control.cancel).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        list(engine.stream(PHONEMES, VOICE, control=control))
    assert time.monotonic() - t0 < 2.0


def test_a_segments_front_is_paid_once_before_its_first_window_and_not_taught_as_window_cost() -> None:
    plain, fronted = FakeEngine(window_s=0.0, audio_s=0.0), FakeEngine(window_s=0.0, audio_s=0.0, front_s=0.3)
    for engine in (plain, fronted):
        list(engine.stream(PHONEMES * 3, VOICE, first_window_s=0.2))  # teaches the window cost
    t0 = time.monotonic()
    pieces = fronted.stream(PHONEMES * 3, VOICE, first_window_s=0.2)
    next(pieces)
    first = time.monotonic() - t0
    list(pieces)
    rest = time.monotonic() - t0 - first
    assert 0.3 <= first < 1.0 and rest < 0.2, (first, rest)
    fit = fronted.window_cost.fit()
    assert fit is not None and fit[0] < 0.05, fit  # the front is not a window's fixed cost
