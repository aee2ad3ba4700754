"""The speech service every transport shares: validation, admission, sessions, encoding, metrics.

HTTP, WebSocket and gRPC handlers only translate their wire format to :class:`SpeechRequest`
and the :class:`EncodedChunk` stream back; all behaviour lives here and in ``duplex``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass, replace

import numpy as np

from voxserve.audio import Encoder, StreamingResampler, encoded_rate, make_encoder, supported_formats
from voxserve.engines.kokoro import MAX_SPEED, MIN_SPEED
from voxserve.engines.voices import parse_blend
from voxserve.errors import EngineFailure, InputTooLarge, InvalidInput, UnknownVoice, VoxError
from voxserve.piper_voices import check_piper_language
from voxserve.routing import AUTO_VOICE, Router
from voxserve.server import audit
from voxserve.server.admission import Admission
from voxserve.server.auth import Authenticator, Principal
from voxserve.server.lifecycle import Lifecycle
from voxserve.server.metrics import Metrics
from voxserve.server.ratelimit import RateLimiter
from voxserve.server.runtime_api import RuntimeLike, SessionLike
from voxserve.settings import Settings
from voxserve.stream.playback import PlaybackClock
from voxserve.text.languages import normalize_lang
from voxserve.text.ssml import looks_like_ssml, ssml_to_text
from voxserve.types import MAX_OUTPUT_RATE as MAX_RATE
from voxserve.types import MIN_OUTPUT_RATE as MIN_RATE
from voxserve.types import LexiconEntry, SynthesisParams, VoiceInfo, WordTiming

access_log = logging.getLogger("voxserve.access")
log = logging.getLogger("voxserve.server")


@dataclass(frozen=True)
class SpeechRequest:
    """One utterance's options, as every transport expresses them."""

    voice: str | None = None
    text: str = ""
    lang: str | None = None
    speed: float = 1.0
    format: str = "pcm"
    sample_rate: int | None = None
    word_timings: bool = False
    whole_file: bool = False  # a compressed format sent as one complete file at the end (HTTP FLAC)
    lexicon: tuple[LexiconEntry, ...] = ()  # the caller's pronunciation entries (text/lexicon.py)
    input_format: str | None = None  # "text" or "ssml"; None: SSML when the text starts with <speak>


@dataclass(frozen=True)
class EncodedChunk:
    index: int
    offset_s: float
    duration_s: float
    audio: bytes
    words: tuple[WordTiming, ...]
    final: bool


def word_json(word: WordTiming) -> dict[str, object]:
    """A word timing as JSON events carry it (WebSocket chunks, SSE deltas); the characters it was read
    from when known."""
    body: dict[str, object] = {"word": word.word, "start_s": word.start_s, "end_s": word.end_s}
    if word.char_start is not None:
        body["char_start"], body["char_end"] = word.char_start, word.char_end
    return body


@dataclass(frozen=True)
class UtteranceSummary:
    audio_s: float
    chunks: int
    ttfa_ms: float | None
    rtf: float | None
    cancelled: bool
    stall_s: float = 0.0  # seconds a listener playing from the first audio would have waited
    stalls: int = 0  # how many times it would have run dry


class Utterance:
    """One synthesis session with its encoder; iterate :meth:`chunks` once."""

    def __init__(
        self,
        service: SpeechService,
        session: SessionLike,
        request: SpeechRequest,
        voice: VoiceInfo,
        transport: str,
        client: str,
    ) -> None:
        self.request = request
        self.voice = voice
        rate = request.sample_rate or session.sample_rate
        self.encoder: Encoder = make_encoder(request.format, rate, whole=request.whole_file)
        self.sample_rate = self.encoder.sample_rate
        self.content_type = self.encoder.content_type
        self._service = service
        self._session = session
        self._resampler = StreamingResampler(session.sample_rate, rate) if rate != session.sample_rate else None
        self._transport = transport
        self._client = client
        self._who = _caller.get() or client  # who authenticated in this request's context
        self._t0: float | None = None
        self._ttfa: float | None = None
        self._chars = 0
        self._texts: list[str] = []
        self._audio_s = 0.0
        self._chunks = 0
        self._playback = PlaybackClock()  # the listener the stream is measured against (underruns)
        self.cancelled = False
        self.cancel_reason: VoxError | None = None
        self.finished = False

    def push_text(self, text: str) -> None:
        if self._t0 is None:
            self._t0 = time.monotonic()
        self._chars += len(text)
        if self._chars > self._service.settings.max_input_chars:
            raise InputTooLarge(f"utterance longer than {self._service.settings.max_input_chars} characters")
        if self._service.settings.log_text:
            self._texts.append(text)
        self._session.push_text(text)

    def flush(self) -> None:
        self._session.flush()

    def close(self) -> None:
        self._session.close()

    def cancel(self, reason: VoxError | None = None) -> None:
        """Stop making audio. With a ``reason`` (the server shutting down), :meth:`chunks` ends by
        raising it, so the client learns why its audio stopped instead of seeing a normal end."""
        self.cancelled = True
        self.cancel_reason = reason
        self._session.cancel()

    async def chunks(self) -> AsyncIterator[EncodedChunk]:
        rate = self._resampler.to_rate if self._resampler is not None else self._session.sample_rate
        status = "ok"
        try:
            async for chunk in self._session:
                if not len(chunk.samples) and not chunk.words and not chunk.final:
                    continue  # nothing to send
                if self._ttfa is None and self._t0 is not None:
                    self._ttfa = time.monotonic() - self._t0
                samples = chunk.samples if self._resampler is None else self._resampler.process(chunk.samples)
                data = self.encoder.encode(samples)
                sent = len(samples)
                if chunk.final:  # the session's last chunk carries what the resampler and encoder held
                    tail, held = self._tail()
                    data, sent = data + tail, sent + held
                words = chunk.words if self.request.word_timings else ()
                # offsets and durations count the samples sent (a resampler holds a few back at first)
                offset, duration = self._audio_s, sent / rate
                self._chunks += 1
                self._audio_s += duration
                self._playback.on_audio(time.monotonic(), duration)
                yield EncodedChunk(chunk.index, offset, duration, data, words, chunk.final)
            if self.cancel_reason is not None:
                raise self.cancel_reason
            if not self.finished:  # cancelled before its last chunk: a compressed file still needs its end
                tail, held = self._tail()
                if tail:
                    offset, duration = self._audio_s, held / rate
                    self._chunks += 1
                    self._audio_s += duration
                    self._playback.on_audio(time.monotonic(), duration)
                    yield EncodedChunk(self._chunks - 1, offset, duration, tail, (), True)
        except Exception as exc:
            if exc is self.cancel_reason:
                raise
            if not self.cancelled:
                status = "failed"
                if not isinstance(exc, VoxError):  # a fault of this utterance: it alone fails
                    log.error("synthesis failed (voice %s)", self.voice.id, exc_info=exc)
                    raise EngineFailure("synthesis failed; the server logged why") from exc
                raise
            # the client cancelled: whatever the session raised while stopping is of no use to it
            log.warning("session raised %r after cancel; ignored", exc)
        except BaseException:
            status = "aborted"
            raise
        finally:
            if not self.finished:
                self._session.cancel()
            if self.cancelled:
                status = "cancelled"
            self._service.forget(self)
            self._record(status)

    def _tail(self) -> tuple[bytes, int]:
        """End the encoding: the bytes of what the resampler and encoder still held, and its samples."""
        held = self._resampler.flush() if self._resampler is not None else np.zeros(0, np.float32)
        self.finished = True
        return self.encoder.encode(held) + self.encoder.finish(), len(held)

    def summary(self) -> UtteranceSummary:
        stats = self._session.stats
        rtf = stats.compute_s / stats.audio_s if stats.audio_s > 0 else None
        ttfa = None if self._ttfa is None else self._ttfa * 1000.0
        playback = self._playback
        return UtteranceSummary(
            self._audio_s, self._chunks, ttfa, rtf, self.cancelled, playback.stall_s, len(playback.stalls)
        )

    def _record(self, status: str) -> None:
        stats = self._session.stats
        label = "blend" if self.voice.name == "blend" else self.voice.id  # keeps metric labels bounded
        stall_s = self._playback.stall_s
        self._service.metrics.observe_stream(
            self.voice.engine, label, self._transport, self._ttfa, stats.audio_s, stats.compute_s, stall_s
        )
        line: dict[str, object] = {
            "event": "utterance",
            "transport": self._transport,
            "client": self._client,
            "voice": self.voice.id,
            "format": self.request.format,
            "chars": self._chars,
            "audio_s": round(self._audio_s, 3),
            "ttfa_ms": None if self._ttfa is None else round(self._ttfa * 1000.0, 1),
            "stall_s": round(stall_s, 3),
            "status": status,
        }
        if self._service.settings.log_text:
            line["text"] = "".join(self._texts)
        access_log.info(json.dumps(line))
        fields: dict[str, object] = {"client": self._who, "ip": self._client, "transport": self._transport}
        fields["voice"] = self.voice.id
        fields.update(chars=self._chars, audio_s=line["audio_s"], status=status, stall_s=line["stall_s"])
        if "text" in line:
            fields["text"] = line["text"]
        audit.write(fields)


_caller: ContextVar[str] = ContextVar("voxserve_caller", default="")


def _read_ssml(request: SpeechRequest) -> SpeechRequest:
    kind = (request.input_format or "").lower()
    if kind not in ("", "text", "ssml"):
        raise InvalidInput(f"input_format must be 'text' or 'ssml', got {request.input_format!r}")
    if kind != "ssml" and (kind == "text" or not looks_like_ssml(request.text)):
        return request
    document = ssml_to_text(request.text)
    speed = request.speed * document.speed if document.speed is not None else request.speed
    return replace(request, text=document.text, speed=speed, input_format="text")


class SpeechService:
    def __init__(
        self,
        settings: Settings,
        runtime: RuntimeLike,
        lifecycle: Lifecycle,
        metrics: Metrics,
        admission: Admission,
        limiter: RateLimiter,
        authenticator: Authenticator,
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.lifecycle = lifecycle
        self.metrics = metrics
        self.admission = admission
        self.limiter = limiter
        self.authenticator = authenticator
        self._voices: dict[str, VoiceInfo] | None = None
        self._live: set[Utterance] = set()

    # --- who may call --------------------------------------------------------------
    def authorize(self, token: str | None, client_ip: str | None) -> Principal:
        principal = self.authenticator.authenticate(token)
        self.limiter.check(principal.id, client_ip)
        # what the audit log names the caller by, for the utterances this request context opens
        _caller.set("" if principal.kind == "anonymous" else principal.id)
        return principal

    # --- catalogue -----------------------------------------------------------------
    def voices(self) -> list[VoiceInfo]:
        self.lifecycle.require_ready()
        if self._voices is None:
            self._voices = {voice.id: voice for voice in self.runtime.voices()}
        return list(self._voices.values())

    def voice(self, voice_id: str) -> VoiceInfo:
        """The voice ``voice_id`` names: a listed voice, or a blend of Kokoro voices (``af_heart:0.7+af_bella:0.3``)."""
        self.voices()
        assert self._voices is not None
        known = self._voices.get(voice_id) or self._folded().get(voice_id.lower())
        if known is not None:
            return known
        if "+" not in voice_id and ":" not in voice_id:
            raise UnknownVoice(f"unknown voice {voice_id!r}; GET /v1/voices lists the available ones")
        try:
            parts = parse_blend(voice_id)
        except ValueError as exc:
            raise UnknownVoice(f"bad voice blend {voice_id!r}: {exc}") from None
        members = []
        for name, _ in parts:
            member = self._voices.get(name) or self._folded().get(name.lower())
            if member is None:
                raise UnknownVoice(f"unknown voice {name!r} in blend {voice_id!r}; GET /v1/voices lists them")
            members.append(member)
        if any(member.engine != "kokoro" for member in members):
            raise InvalidInput(f"only Kokoro voices can be blended; {voice_id!r} mixes in another engine's voice")
        first = members[0]
        canonical = "+".join(f"{member.id}:{weight:g}" for member, (_, weight) in zip(members, parts, strict=True))
        return VoiceInfo(canonical, first.engine, first.lang, first.gender, first.sample_rate, "blend")

    def _router(self) -> Router:
        return Router(self.voices(), self.settings.default_voice, self.settings.language_voices)

    def _folded(self) -> dict[str, VoiceInfo]:
        """Voices by lower-case id, so "AF_HEART" finds af_heart."""
        return {voice.id.lower(): voice for voice in self.voices()}

    def share(self, request: SpeechRequest) -> float | None:
        """What one real-time stream of this request's voice takes of the machine (admission's unit); None
        when not known (no cost learned yet, or a voice no engine serves: the default one on a fake runtime)."""
        try:
            engine = self.voice(request.voice or self.settings.default_voice).engine
        except VoxError:
            return None
        return self.runtime.stream_share(engine)

    def engines(self) -> list[str]:
        return sorted({voice.engine for voice in self.voices()})

    # --- requests ------------------------------------------------------------------
    def validate(self, request: SpeechRequest, *, needs_text: bool) -> SpeechRequest:
        """Fill defaults and check every option; raise :class:`InvalidInput` with what to fix. SSML
        input becomes the text it reads (text/ssml.py)."""
        self.lifecycle.require_ready()
        request = _read_ssml(request)
        named = None if request.voice is None or request.voice.strip().lower() == AUTO_VOICE else request.voice
        if named is not None:
            named = self.voice(named.strip()).id  # an unknown voice is an UnknownVoice, whatever the text
        route = self._router().route(request.text, named, request.lang)
        voice = route.voice
        info = self.voice(voice)
        if request.lang is not None or route.rerouted or named is None:
            request = replace(request, lang=route.lang)
        if request.lang is not None:
            lang = normalize_lang(request.lang)
            check_piper_language(info.engine, voice, info.lang, lang)
        fmt = request.format.lower()
        if fmt not in supported_formats():
            raise InvalidInput(f"unsupported format {request.format!r}; use one of {', '.join(supported_formats())}")
        if not MIN_SPEED <= request.speed <= MAX_SPEED:
            raise InvalidInput(f"speed must be between {MIN_SPEED} and {MAX_SPEED}, got {request.speed}")
        rate = request.sample_rate
        if rate is not None and not MIN_RATE <= rate <= MAX_RATE:
            raise InvalidInput(f"sample_rate must be between {MIN_RATE} and {MAX_RATE} Hz, got {rate}")
        if needs_text and not request.text.strip():
            raise InvalidInput("input text is empty")
        if len(request.text) > self.settings.max_input_chars:
            raise InputTooLarge(
                f"input is {len(request.text)} characters; the limit is {self.settings.max_input_chars}"
            )
        return replace(request, voice=info.id, format=fmt)  # the id as listed ("AF_HEART" → af_heart)

    def open(self, request: SpeechRequest, transport: str, client: str = "", *, pace: bool = True) -> Utterance:
        """Open a session for a validated request (the caller holds an admission slot). ``pace``: text
        still arrives and a listener plays along; else the audio is made as fast as it is taken."""
        assert request.voice is not None
        params = SynthesisParams(
            voice=request.voice,
            speed=request.speed,
            lang=request.lang,
            word_timings=request.word_timings,
            lexicon=request.lexicon,
        )
        self.lifecycle.require_ready()  # also refuses new utterances on open connections while draining
        session = self.runtime.open_session(params, pace=pace)
        try:
            utterance = Utterance(self, session, request, self.voice(request.voice), transport, client)
        except BaseException:
            session.cancel()  # e.g. the encoder could not be built: don't leave the session running
            raise
        self._live.add(utterance)
        return utterance

    def forget(self, utterance: Utterance) -> None:
        self._live.discard(utterance)

    def speak(self, request: SpeechRequest, transport: str, client: str = "") -> Utterance:
        """Open a one-shot utterance with all its text already pushed. It is not paced: a client saving a
        file gets it faster than real time, and one that plays along reads it as it plays (the bounded
        queues hold the rest); its windows are due later than live streams', which come first."""
        utterance = self.open(request, transport, client, pace=False)
        utterance.push_text(request.text)
        utterance.close()
        return utterance

    def output_rate(self, request: SpeechRequest) -> int:
        assert request.voice is not None
        return encoded_rate(request.format, request.sample_rate or self.voice(request.voice).sample_rate)

    def cancel_all(self, reason: VoxError | None = None) -> int:
        """Cancel every live utterance (end of the shutdown grace period), telling each client ``reason``."""
        live = list(self._live)
        for utterance in live:
            utterance.cancel(reason)
        return len(live)
