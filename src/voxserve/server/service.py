"""The speech service every transport shares: voices, validation, admission shares, sessions.

HTTP, WebSocket and gRPC handlers only translate their wire format to :class:`SpeechRequest`
and the :class:`EncodedChunk` stream back (:mod:`voxserve.server.utterance`); all behaviour lives here,
there and in ``duplex``.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from voxserve.audio import encoded_rate, supported_formats
from voxserve.engines.kokoro import MAX_SPEED, MIN_SPEED
from voxserve.engines.voices import parse_blend
from voxserve.errors import InputTooLarge, InvalidInput, UnknownVoice, VoxError
from voxserve.piper_voices import check_piper_language
from voxserve.routing import AUTO_VOICE, Router
from voxserve.server.admission import Admission
from voxserve.server.auth import Authenticator, Principal
from voxserve.server.lifecycle import Lifecycle
from voxserve.server.metrics import Metrics
from voxserve.server.ratelimit import RateLimiter
from voxserve.server.runtime_api import RuntimeLike
from voxserve.server.utterance import SpeechRequest, Utterance, caller
from voxserve.settings import Settings
from voxserve.text.languages import normalize_lang
from voxserve.text.ssml import looks_like_ssml, ssml_to_text
from voxserve.types import MAX_OUTPUT_RATE as MAX_RATE
from voxserve.types import MIN_OUTPUT_RATE as MIN_RATE
from voxserve.types import SynthesisParams, VoiceInfo

access_log = logging.getLogger("voxserve.access")
log = logging.getLogger("voxserve.server")


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
        caller.set("" if principal.kind == "anonymous" else principal.id)
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
