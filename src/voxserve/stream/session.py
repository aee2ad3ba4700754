"""The streaming synthesis session: text in (whole or in fragments), audio chunks out.

One session per utterance. ``push_text`` takes fragments (LLM tokens) any number of times; sentences
and clauses are spoken once known, the first kept short for early first audio. ``flush`` speaks what is
buffered; ``close`` ends the input; ``cancel`` stops work. ``async for chunk in session`` yields chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator

import numpy as np

from voxserve.audio.joiner import Joiner
from voxserve.audio.loudness import LoudnessNormalizer
from voxserve.engines.base import Engine
from voxserve.engines.onnx import RunControl, current_thread_budget
from voxserve.engines.preemption import work_timer
from voxserve.errors import Cancelled, InvalidInput
from voxserve.limits import check_input_length
from voxserve.stream.alignment import SourceAligner, WordQueue
from voxserve.stream.jobs import ActiveStream
from voxserve.stream.pauses import TrailingQuiet, pause_after_ms
from voxserve.stream.playback import PlaybackClock
from voxserve.stream.pool import WorkerPool
from voxserve.stream.session_config import SessionConfig, SessionStats
from voxserve.stream.timing import word_spans
from voxserve.stream.window_budget import WindowPlanner
from voxserve.text.frontend import Frontend
from voxserve.text.segment import IncrementalSegmenter, TextSegment
from voxserve.types import AudioChunk, EngineAudio, FloatAudio, PhonemeSegment, SynthesisParams

log = logging.getLogger(__name__)

_END = object()
_SENTENCE_END = frozenset('.!?。！？…"”)')


class SynthesisSession:
    """See the module docstring. Create through :meth:`voxserve.runtime.Runtime.open_session`."""

    def __init__(
        self,
        *,
        engine: Engine,
        frontend: Frontend,
        pool: WorkerPool,
        params: SynthesisParams,
        lang: str,
        config: SessionConfig,
        on_audio: Callable[[float, int | None], None] | None = None,
    ) -> None:
        self.engine = engine
        self._on_audio = on_audio  # told the seconds of each piece of audio delivered, and the threads
        self._threads: int | None = None  # the last job that made audio ran with
        self.params, self.lang = params, lang
        self.sample_rate = engine.sample_rate
        self._frontend, self._pool = frontend, pool
        self._config = config
        self._segmenter = IncrementalSegmenter(config.first_segment_words, config.max_segment_chars)
        self._joiner = Joiner(engine.sample_rate)
        self._loudness = LoudnessNormalizer(engine.sample_rate)
        pause_scale = 1.0 / params.speed if params.speed > 0 else 1.0  # pauses follow the speaking rate
        self._pause_ms = {
            "sentence": config.sentence_pause_ms * pause_scale,
            "clause": config.clause_pause_ms * pause_scale,
            "none": 0.0,
        }
        self._segments: asyncio.Queue[TextSegment | object] = asyncio.Queue()
        self._out: asyncio.Queue[AudioChunk | BaseException | object] = asyncio.Queue(maxsize=64)
        self._chars = 0
        self._closed = False
        self._cancelled = False
        self._control = RunControl()
        self._t_text: float | None = None
        self._t_first_audio: float | None = None
        self._t_resumed: float | None = None  # when text came for a listener that ran dry waiting for it
        self._resumed = False  # the next chunk starts the listener's playback again
        self._clock = PlaybackClock()  # the listener, playing from the first audio: when it runs dry
        self._windows = WindowPlanner(engine, pool, config, self._clock)
        self._stream: ActiveStream | None = None  # this stream in the pool, while it produces audio
        self._compute_s = 0.0
        self._words = WordQueue()
        self._source = SourceAligner(lambda token: frontend.reading(token, self.lang, self.params.lexicon))
        self._idle_handle: asyncio.TimerHandle | None = None
        self.join_positions: list[int] = []  # stream samples where one segment's audio meets the next
        self._samples_out = 0
        self._chunks = 0
        self._final_out = False
        self._unread = False  # the consumer has stopped reading: the output queue is full
        self._task = asyncio.get_running_loop().create_task(self._produce())

    # --- input ------------------------------------------------------------------------
    def push_text(self, text: str) -> None:
        if self._closed:
            raise InvalidInput("this utterance is closed; start a new one to send more text")
        if not text:
            return
        self._chars += len(text)
        check_input_length(self._chars, self._config.max_input_chars)
        if self._t_text is None:
            self._t_text = time.monotonic()
        self._source.push(text)
        for segment in self._segmenter.push(text):
            self._segments.put_nowait(segment)
        self._arm_idle_flush()

    def _arm_idle_flush(self) -> None:
        """If the buffer ends a sentence and no more text comes soon, speak it without waiting.

        A final "." is ambiguous while streaming ("3." may become "3.5"), so the segmenter waits for the
        next character; a short quiet spell settles it, but never after "Dr." or an initial."""
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        tail = self._segmenter.buffered.rstrip()
        ends = tail and tail[-1] in _SENTENCE_END and not self._segmenter.ends_in_abbreviation()
        if ends and self._config.idle_flush_ms > 0:
            loop = asyncio.get_running_loop()
            self._idle_handle = loop.call_later(self._config.idle_flush_ms / 1000, self._idle_flush)

    def _idle_flush(self) -> None:
        self._idle_handle = None
        if not self._closed:
            self.flush()

    def flush(self) -> None:
        """Speak whatever text is buffered, even without a sentence end."""
        for segment in self._segmenter.flush():
            self._segments.put_nowait(segment)

    def close(self) -> None:
        """No more text: speak what is left, then end the stream."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        self._segments.put_nowait(_END)

    def cancel(self) -> None:
        """Stop now: drop buffered text and queued work, abort the model call in flight; the iterator ends."""
        if self._cancelled:
            return
        self._cancelled = True
        self._control.cancel()
        self._closed = True
        self._task.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def stats(self) -> SessionStats:
        ttfa = None
        if self._t_first_audio is not None and self._t_text is not None:
            ttfa = max(0.0, self._t_first_audio - self._t_text)
        return SessionStats(ttfa, self._samples_out / self.sample_rate, self._compute_s, self._chunks)

    # --- output -----------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[AudioChunk]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[AudioChunk]:
        try:
            while True:
                if self._cancelled and self._out.empty():
                    return
                item = await self._next_item()
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                assert isinstance(item, AudioChunk)
                yield item
        finally:
            if not self._task.done():  # consumer stopped early: stop the work too
                self.cancel()

    async def _next_item(self) -> object:
        getter = asyncio.ensure_future(self._out.get())
        try:
            done, _ = await asyncio.wait({getter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the consumer was cancelled: no getter left pending
            getter.cancel()
            raise
        if getter in done:
            return getter.result()
        getter.cancel()
        if not self._out.empty():
            return self._out.get_nowait()
        return _END

    async def aclose(self) -> None:
        """Cancel and wait until the producer has stopped."""
        self.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task

    # --- production -------------------------------------------------------------------
    async def _produce(self) -> None:
        try:
            while True:
                spoken = self._segments.empty()  # all the text sent so far: what comes next is the client's
                segment = await self._segments.get()
                if segment is _END:
                    break
                assert isinstance(segment, TextSegment)
                if spoken and self._clock.text_arrived(now := time.monotonic()):
                    self._t_resumed, self._resumed = now, True  # due as a first audio is, from now
                with self._pool.streaming(self._deadline, self._windows.spare_s, self._windows.need) as self._stream:
                    await self._speak(segment)
            if self._samples_out == 0:
                if not self._chars:
                    raise InvalidInput("input text is empty: nothing speakable was sent")
                raise InvalidInput("input text has nothing speakable (only symbols, punctuation or emoji)")
            if not self._final_out:  # text closed after its last piece: the end marker has no audio
                await self._emit(self._loudness.process(self._joiner.finish()), final=True)
            await self._out.put(_END)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # surfaced to the consumer through the queue, never lost
            await self._out.put(exc)
            await self._out.put(_END)

    def _deadline(self) -> float:
        """When the next unit of audio is needed: at once for the first audio (and for the first after
        its listener ran dry waiting for text), else when the listener, playing from the first audio in
        real time, runs out (the moment the server counts a stall), less the playing margin learned by
        the pool (:mod:`voxserve.stream.margin`). Never while the consumer
        is not reading: its audio waits in the queue, and the cores are better spent on streams that are
        read (the pool holds jobs back for streams due soon)."""
        if self._unread:
            return math.inf
        if self._clock.runs_dry_at is None:
            return self._t_resumed or self._t_text or time.monotonic()
        return self._clock.runs_dry_at - self._pool.margin.margin_s

    async def _pace(self) -> None:
        if not self._config.pace or self._clock.runs_dry_at is None:
            return
        ahead = self._clock.ahead_s(time.monotonic())
        if ahead > self._config.lookahead_s:
            await asyncio.sleep(ahead - self._config.lookahead_s)

    async def _timed(self, fn: object, cost: float = 0.0) -> object:
        """Run ``fn`` on the pool with this stream's deadline and its expected ``cost`` (seconds)."""

        def run() -> tuple[object, float, float, int | None]:
            with work_timer() as spent:  # less any wait for cores after a preemption
                result = fn()  # type: ignore[operator]
            if isinstance(result, EngineAudio):
                self._windows.made(len(result.samples) / self.sample_rate)
            return result, spent(), time.monotonic(), current_thread_budget()

        playing, planned = self._clock.playing, self._windows.budget()[1]  # the pool may run it on fewer
        new = self._clock.first_at is None  # its first audio ever: the pool may refuse it
        if not playing:
            self._pool.margin.expect(cost)
        result, spent, done, threads = await self._pool.run(
            run, deadline=self._deadline(), cost=cost, playing=playing, stream=self._stream, threads=planned, new=new
        )
        self._threads = threads if isinstance(result, EngineAudio) else self._threads
        cost, landed = self._windows.cost_at(cost, planned, threads), time.monotonic() - done
        self._pool.margin.ran(spent, cost, first=not playing, landed_s=landed)
        self._compute_s += spent
        return result

    async def _speak(self, text_segment: TextSegment) -> None:
        frontend, lang, engine = self._frontend, self.lang, self.engine
        phonemize = (
            functools.partial(
                frontend.phonemize_phonemes, text_segment.text, lang, engine.alphabet, max_phonemes=engine.max_phonemes
            )
            if self.params.phoneme_input
            else functools.partial(
                frontend.phonemize_segment,
                text_segment,
                lang,
                engine.alphabet,
                max_phonemes=engine.max_phonemes,
                lexicon=self.params.lexicon,
            )
        )
        # the segment's front and first window follow at once: its phonemes are due that much sooner
        segments = await self._timed(phonemize, self._windows.segment_cost())
        assert isinstance(segments, list)
        if self.params.word_timings and not self.params.phoneme_input:
            self._source.segment(text_segment.text, [w.text for segment in segments for w in segment.words])
        for i, segment in enumerate(segments):
            last = i == len(segments) - 1
            await self._speak_windows(segment, text_segment.boundary if last else segment.boundary, last)

    async def _speak_windows(self, segment: PhonemeSegment, boundary: str, ends_text: bool) -> None:
        first_window, next_window = self._windows.plan(self._stream)
        pieces: Iterator[EngineAudio] = self.engine.stream(
            segment.phonemes,
            self.params.voice,
            self.params.speed,
            first_window_s=first_window,
            next_window_s=next_window,
            control=self._control,
        )
        starts = True  # the next job is the segment's first: its front and first window
        # silence this segment's pieces have ended with so far, up to the pause it ends with
        quiet = TrailingQuiet(self.sample_rate, self._pause_ms.get(boundary, 0.0))
        try:
            while True:
                await self._pace()
                if self._cancelled:
                    raise Cancelled("session cancelled")
                window = first_window if starts else (next_window() if next_window is not None else None)
                piece = await self._timed(lambda: next(pieces, None), self._windows.job_cost(window, starts))
                starts = False
                if piece is None:
                    break
                assert isinstance(piece, EngineAudio)
                joined = self._joiner.push(
                    piece.samples,
                    trim_start=piece.first,
                    trim_end=piece.last,
                    pause_after_ms=self._pause_after(piece, boundary, quiet.samples) if piece.last else 0.0,
                    lead_in=piece.lead_in if piece.first else None,
                    # a cut inside a phrase (no pause wanted): the model still ends the piece as if the
                    # sentence ended, with up to ~0.3 s of silence before its padding; cut all of it
                    tail=piece.tail if piece.last and self._pause_ms.get(boundary, 0.0) > 0 else None,
                )
                if not piece.last:
                    quiet.add(piece.samples)
                audio = self._loudness.process(joined.audio)
                # the stream's last piece (text closed, nothing queued) takes the joiner's tail: its last
                # chunk is the final one, with audio, rather than an empty end marker after it
                done = piece.last and not piece.more_runs  # the engine has no more for this segment
                final = done and ends_text and self._closed and self._segments.qsize() == 1
                if final:
                    audio = np.concatenate([audio, self._loudness.process(self._joiner.finish())])
                if piece.first and joined.span.out_start > 0:
                    self.join_positions.append(joined.span.out_start)
                if self.params.word_timings and piece.first and piece.phoneme_durations is not None:
                    lead = piece.lead_in or 0
                    rate = self.sample_rate
                    origin = joined.span.out_start - joined.span.in_start + lead  # stream position of phoneme 0
                    self._words.add(
                        self._source.timing(word, round((origin + a) / rate, 3), round((origin + b) / rate, 3))  # to ms
                        for word, a, b in word_spans(segment, piece.phoneme_durations)
                    )
                if done:  # the segment's audio ends here: so do its words
                    self._words.end_segment((self._samples_out + len(audio)) / self.sample_rate)
                await self._emit(audio, final)
                if done:
                    break  # asking the engine again would take a worker job only to learn that it is done
        finally:
            close = getattr(pieces, "close", None)
            if close is not None:
                # A worker may still be inside the generator (cancelled mid-window); it is then
                # dropped when that window finishes and collected with it.
                with contextlib.suppress(ValueError):
                    close()

    def _pause_after(self, piece: EngineAudio, boundary: str, quiet_before: int) -> float:
        """Silence to add after a segment's last piece (:func:`voxserve.stream.pauses.pause_after_ms`)."""
        target = self._pause_ms.get(boundary, 0.0)
        return pause_after_ms(piece.samples, piece.tail, target, quiet_before, self.sample_rate)

    async def _emit(self, audio: FloatAudio, final: bool = False) -> None:
        """Cut ``audio`` into chunks of about ``chunk_ms`` and queue them with the words they start."""
        if self._on_audio is not None and len(audio):
            self._on_audio(len(audio) / self.sample_rate, self._threads)
        step = max(1, int(self.sample_rate * self._config.chunk_ms / 1000))
        parts = [audio[pos : pos + step] for pos in range(0, len(audio), step)] or [audio]
        for n, part in enumerate(parts):
            last = final and n == len(parts) - 1
            self._final_out |= last
            end_s = (self._samples_out + len(part)) / self.sample_rate
            words = self._words.take(end_s, everything=last)
            if len(part) == 0 and not last:
                continue
            if len(part):
                now = time.monotonic()
                self._clock.on_audio(now, len(part) / self.sample_rate)
                if self._t_first_audio is None:
                    self._t_first_audio = now
            chunk = AudioChunk(
                part, self.sample_rate, self._samples_out, self._chunks, words, final=last, resumed=self._resumed
            )
            if len(part):
                self._resumed = False  # told once, with the first audio of the text that came
            self._chunks += 1
            self._samples_out += len(part)
            self._unread = self._out.full()
            try:
                await self._out.put(chunk)
            finally:
                self._unread = False
