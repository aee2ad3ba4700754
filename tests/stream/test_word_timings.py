"""Word timings on the real models: each word where the audio says it is (Whisper's own word times), and
none past the audio it belongs to."""

from __future__ import annotations

import itertools
import statistics
from typing import TYPE_CHECKING

import pytest

from voxserve.runtime import Runtime
from voxserve.types import SynthesisParams

from .test_session import CALLBACK, PIPER, audio_of, collect

if TYPE_CHECKING:
    from tests.conftest import Transcriber


@pytest.mark.parametrize("voice", ["af_heart", PIPER])
async def test_word_timings_follow_the_audio(runtime: Runtime, transcribe: Transcriber, voice: str) -> None:
    chunks, session = await collect(runtime, voice, CALLBACK)
    words = [w for c in chunks for w in c.words]
    assert [w.word for w in words] == CALLBACK.replace(".", "").split()
    assert all(a.start_s < a.end_s <= b.start_s + 1e-6 for a, b in itertools.pairwise(words))
    audio = audio_of(chunks)
    assert words[-1].end_s <= len(audio) / session.sample_rate + 0.05
    for chunk in chunks:  # each word is announced with the chunk it starts in (or an earlier one)
        assert all(w.start_s < chunk.start_s + chunk.duration_s + 1e-6 for w in chunk.words)
    heard = transcribe.words(audio, session.sample_rate)  # Whisper's own word timestamps
    ours = {w.word.lower(): w.start_s for w in words}
    diffs = [abs(ours[word] - start) for word, start in heard if word in ours]
    assert len(diffs) >= len(words) // 2
    print(f"{voice}: median |word start - Whisper's| = {statistics.median(diffs) * 1000:.0f} ms")
    assert statistics.median(diffs) < 0.15


@pytest.mark.parametrize("voice", ["af_heart", PIPER])
async def test_words_end_with_their_audio_without_final_punctuation_or_across_a_flush(
    runtime: Runtime, voice: str
) -> None:
    """Word times come from the model's phoneme durations, which count the silence it adds after a
    sentence; the joiner trims it. A last word without final punctuation ended 0.1-0.6 s after the audio,
    and the word before a flush overlapped the next one."""
    session = runtime.open_session(SynthesisParams(voice=voice, word_timings=True), pace=False)
    session.push_text("Hello there")
    session.flush()
    session.push_text(" and welcome back")
    session.close()
    chunks = [chunk async for chunk in session]
    words = [w for c in chunks for w in c.words]
    assert [w.word for w in words] == ["Hello", "there", "and", "welcome", "back"]
    assert all(a.start_s <= a.end_s <= b.start_s + 1e-6 for a, b in itertools.pairwise(words)), words
    assert words[-1].end_s <= len(audio_of(chunks)) / session.sample_rate + 1e-3, words
