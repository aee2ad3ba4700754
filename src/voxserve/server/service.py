"""The speech service every transport shares: voices, validation, admission shares, sessions.

HTTP, WebSocket and gRPC handlers only translate their wire format to :class:`SpeechRequest` and the
:class:`EncodedChunk` stream back (:mod:`voxserve.server.protocol`); what a request may ask for is the
request policy's (:mod:`voxserve.policy`); the rest of the behaviour lives here, in
:mod:`voxserve.server.utterance` and in ``duplex``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from voxserve.errors import Unauthorized, VoxError
from voxserve.policy import RequestPolicy, SpeechRequest
from voxserve.server.auth import Principal
from voxserve.server.runtime_api import RuntimeLike
from voxserve.server.utterance import Utterance, caller
from voxserve.settings import Settings
from voxserve.types import SynthesisParams, VoiceInfo

if TYPE_CHECKING:
    from voxserve.server.state import ServerState

access_log = logging.getLogger("voxserve.access")
log = logging.getLogger("voxserve.server")


class SpeechService:
    """The behaviour every transport shares, over the pieces its :class:`ServerState` holds (it keeps no
    copy of them: the state is their one holder)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self._policy: RequestPolicy | None = None
        self._live: set[Utterance] = set()
        self._prices: dict[str, Callable[[], float | None]] = {}  # per engine: see price()

    # --- what the state holds and most callers read ---------------------------------------
    @property
    def settings(self) -> Settings:
        return self.state.settings

    @property
    def runtime(self) -> RuntimeLike:
        return self.state.runtime

    # --- who may call --------------------------------------------------------------
    def authorize(self, token: str | None, client_ip: str | None) -> Principal:
        """The caller ``token`` names, within the rate limits. A refused token spends its address's share
        too, so that guessing keys, or a flood without one, is limited like any other traffic."""
        try:
            principal = self.state.authenticator.authenticate(token)
        except Unauthorized:
            self.state.limiter.check("anonymous", client_ip)
            raise
        self.state.limiter.check(principal.id, client_ip)
        # what the audit log names the caller by, for the utterances this request context opens
        caller.set("" if principal.kind == "anonymous" else principal.id)
        return principal

    # --- catalogue -----------------------------------------------------------------
    @property
    def policy(self) -> RequestPolicy:
        """The request policy over the runtime's voices (built once the models have loaded)."""
        self.state.lifecycle.require_ready()
        if self._policy is None:
            self._policy = RequestPolicy(self.settings, self.runtime.voices())
        return self._policy

    def voices(self) -> list[VoiceInfo]:
        return list(self.policy.book.voices)

    def voice(self, voice_id: str) -> VoiceInfo:
        """The voice ``voice_id`` names: a listed voice, or a blend of Kokoro voices (``af_heart:0.7+af_bella:0.3``)."""
        return self.policy.voice(voice_id)

    def share(self, request: SpeechRequest) -> float | None:
        """What one real-time stream of this request's voice takes of the machine now (admission's unit);
        None when not known (no cost learned yet, or a voice no engine serves: the default one on a fake
        runtime)."""
        return self.price(request)()

    def price(self, request: SpeechRequest) -> Callable[[], float | None]:
        """What an admission booking of this request is priced by: its :meth:`share`, asked again each
        time admission adds up the load (one callable per engine, so the sum asks each engine once)."""
        try:
            engine = self.voice(request.voice or self.settings.default_voice).engine
        except VoxError:
            return lambda: None
        return self._prices.setdefault(engine, functools.partial(self.runtime.stream_share, engine))

    def engines(self) -> list[str]:
        return self.policy.book.engines()

    # --- requests ------------------------------------------------------------------
    def validate(self, request: SpeechRequest, *, needs_text: bool) -> SpeechRequest:
        """Resolve and check a request (:meth:`voxserve.policy.RequestPolicy.resolve`) while the server
        takes work."""
        self.state.lifecycle.require_ready()
        return self.policy.resolve(request, needs_text=needs_text)

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
            phoneme_input=request.phonemes,
        )
        self.state.lifecycle.require_ready()  # also refuses new utterances on open connections while draining
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
        return self.policy.output_rate(request)

    def cancel_all(self, reason: VoxError | None = None) -> int:
        """Cancel every live utterance (end of the shutdown grace period), telling each client ``reason``."""
        live = list(self._live)
        for utterance in live:
            utterance.cancel(reason)
        return len(live)
