"""One utterance on its way out: the options every transport expresses, and the encoded chunks back.

:class:`~voxserve.policy.SpeechRequest` is what HTTP, WebSocket and gRPC handlers make of their wire
format; :class:`Utterance` turns a synthesis session into :class:`EncodedChunk` values (resampled, encoded,
followed by the listener's playback clock) and, when it ends, writes its metrics, access-log line and
audit line. :class:`voxserve.server.service.SpeechService` creates them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from voxserve.audio import Encoder, StreamingResampler, make_encoder
from voxserve.errors import EngineFailure, Overloaded, VoxError
from voxserve.policy import SpeechRequest
from voxserve.server import audit
from voxserve.server.runtime_api import SessionLike
from voxserve.stream.playback import PlaybackClock
from voxserve.types import VoiceInfo, WordTiming

if TYPE_CHECKING:
    from voxserve.server.service import SpeechService

access_log = logging.getLogger("voxserve.access")
log = logging.getLogger("voxserve.server")

# who authenticated in the current request's context (SpeechService.authorize sets it)
caller: ContextVar[str] = ContextVar("voxserve_caller", default="")


@dataclass(frozen=True)
class EncodedChunk:
    index: int
    offset_s: float
    duration_s: float
    audio: bytes
    words: tuple[WordTiming, ...]
    final: bool


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
        self._who = caller.get() or client  # who authenticated in this request's context
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
        self._chars += len(text)  # the session refuses text past max_input_chars (voxserve.limits)
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
                now = time.monotonic()
                if chunk.resumed:  # its listener waited for the client's text: no stall of the server's
                    self._playback.text_arrived(now)
                if self._playback.on_audio(now, duration) > 0 and len(self._playback.stalls) == 1:
                    self._teach_admission(stalled=True)  # at once: streams arriving meanwhile must not pile on
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
                if type(exc) is Overloaded:  # the pool refused its first audio: admission let in one too many
                    status = "refused"
                    self._teach_admission(stalled=True, refused=True)
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

    def _teach_admission(self, stalled: bool, refused: bool = False) -> None:
        """Tell admission this stream's listener ran dry (at its first stall), the pool ``refused`` it, or
        it played clean (at its end)."""
        self._service.state.admission.observe(self._service.share(self.request), stalled, refused)

    def _record(self, status: str) -> None:
        stats = self._session.stats
        label = "blend" if self.voice.name == "blend" else self.voice.id  # keeps metric labels bounded
        stall_s = self._playback.stall_s
        if status == "ok" and self._audio_s > 0 and not self._playback.stalled:
            self._teach_admission(stalled=False)  # it played to its end without a stall
        self._service.state.metrics.observe_stream(
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
            "stalls": len(self._playback.stalls),
            "status": status,
        }
        if self._service.settings.log_text:
            line["text"] = "".join(self._texts)
        access_log.info(json.dumps(line))
        fields: dict[str, object] = {"client": self._who, "ip": self._client, "transport": self._transport}
        fields["voice"] = self.voice.id
        fields.update(chars=self._chars, audio_s=line["audio_s"], status=status)
        fields.update(stall_s=line["stall_s"], stalls=line["stalls"])
        if "text" in line:
            fields["text"] = line["text"]
        audit.write(fields)
