"""Every wire schema of the server and its converters, one section per transport.

Handlers translate between their wire format and the transport-neutral values here and nowhere else:
:class:`~voxserve.policy.SpeechRequest` in, :class:`~voxserve.server.utterance.EncodedChunk` and the
duplex events (:mod:`voxserve.server.duplex`) out. :func:`send_within` is the one stall-guarded send
that the HTTP and gRPC streams write through.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Literal

from pydantic import BaseModel, Field

from voxserve.client.waits import within
from voxserve.errors import ClientTooSlow, InvalidInput
from voxserve.policy import SpeechRequest, whole_file
from voxserve.server import duplex as dx
from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.utterance import EncodedChunk, Utterance, UtteranceSummary
from voxserve.text.lexicon import parse_entries
from voxserve.types import WordTiming


async def send_within(sending: Awaitable[None], stall_s: float) -> None:
    """Send one part of a stream, giving up with :class:`ClientTooSlow` after ``stall_s``: a client that
    stops reading blocks the send once the socket's buffers (or HTTP/2 flow control) are full, and it
    would hold its stream slot for ever."""
    try:
        await within(sending, stall_s)
    except TimeoutError:
        raise ClientTooSlow(f"the client took no audio for {stall_s:g} s") from None


def word_json(word: WordTiming) -> dict[str, object]:
    """A word timing as JSON events carry it (WebSocket chunks, SSE deltas); the characters it was read
    from when known."""
    body: dict[str, object] = {"word": word.word, "start_s": word.start_s, "end_s": word.end_s}
    if word.char_start is not None:
        body["char_start"], body["char_end"] = word.char_start, word.char_end
    return body


# --- HTTP: POST /v1/audio/speech ----------------------------------------------------------------
OPENAI_PCM_RATE = 24000  # OpenAI's raw pcm is 24 kHz s16le; keep that default for unchanged clients


class SpeechBody(BaseModel):
    model: str = "tts-1"
    input: str
    voice: str | None = None
    response_format: str = "mp3"
    speed: float = 1.0
    stream_format: Literal["audio", "sse"] = "audio"
    instructions: str | None = None  # accepted for compatibility; not used
    # voxserve extras
    lang: str | None = None
    sample_rate: int | None = None
    timestamps: bool = Field(default=False, description="Word timings in SSE delta events.")
    lexicon: list[Any] | None = Field(default=None, description="Pronunciation entries (docs/protocol.md).")
    input_format: str | None = Field(default=None, description="text or ssml (default: ssml if it starts <speak>)")


def http_request(body: SpeechBody, voice: str | None) -> SpeechRequest:
    """The request a speech body asks for, spoken by ``voice`` (what its ``model`` and ``voice`` name)."""
    if body.timestamps and body.stream_format != "sse":
        raise InvalidInput('word timestamps come in SSE events: add "stream_format": "sse"')
    rate = body.sample_rate
    if rate is None and body.response_format.lower() == "pcm":
        rate = OPENAI_PCM_RATE
    return SpeechRequest(
        voice=voice,
        text=body.input,
        lang=body.lang,
        speed=body.speed,
        format=body.response_format,
        sample_rate=rate,
        word_timings=body.timestamps,
        lexicon=parse_entries(body.lexicon),
        input_format=body.input_format,
        whole_file=whole_file(body.response_format),  # also in SSE: the last delta holds the file
    )


async def audio_bytes(chunks: AsyncIterator[EncodedChunk]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        if chunk.audio:
            yield chunk.audio


async def sse_events(utterance: Utterance, chunks: AsyncIterator[EncodedChunk]) -> AsyncIterator[bytes]:
    """One ``speech.audio.delta`` per chunk with audio; the last has ``final: true``. A chunk without
    bytes (a whole-file FLAC is all in the last one) sends nothing: its words go with the next delta."""
    words: list[WordTiming] = []
    async for chunk in chunks:
        words.extend(chunk.words)
        if not chunk.audio and not chunk.final:
            continue
        event: dict[str, object] = {"type": "speech.audio.delta", "audio": base64.b64encode(chunk.audio).decode()}
        if utterance.request.word_timings:
            event["words"] = [word_json(w) for w in words]
        event["final"] = chunk.final
        words = []
        yield _sse_line(event)
    summary = utterance.summary()
    chars = len(utterance.request.text)
    yield _sse_line(
        {
            "type": "speech.audio.done",
            "usage": {"input_tokens": chars, "output_tokens": 0, "total_tokens": chars},
            "audio_s": round(summary.audio_s, 3),
            "ttfa_ms": None if summary.ttfa_ms is None else round(summary.ttfa_ms, 1),
            "stall_s": round(summary.stall_s, 3),
            "stalls": summary.stalls,
        }
    )


def _sse_line(event: dict[str, object]) -> bytes:
    return b"data: " + json.dumps(event, separators=(",", ":")).encode() + b"\n\n"


# --- WebSocket: /v1/tts/stream (JSON text frames) ---------------------------------------------------
def parse_message(raw: str) -> dx.ClientMessage:
    """One client text frame → a protocol message (unparsable frames become :class:`duplex.Invalid`)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser goes
        return dx.Invalid(InvalidInput("message is not valid JSON"))
    if not isinstance(data, dict):
        return dx.Invalid(InvalidInput("message must be a JSON object"))
    kind = data.get("type")
    if not isinstance(kind, str):
        return dx.Invalid(
            InvalidInput("message needs a string field 'type' (config, text, flush, close, cancel, ping)")
        )
    context = data.get("context_id")
    if context is not None and (not isinstance(context, str) or not context or len(context) > 128):
        return dx.Invalid(InvalidInput("'context_id' must be a non-empty string of at most 128 characters"))
    if kind == "text":
        text = data.get("text")
        if not isinstance(text, str):
            return dx.Invalid(InvalidInput("'text' message needs a string field 'text'"))
        return dx.Text(text, context)
    if kind == "config":
        try:
            protocol = _opt_int(data, "protocol")
            request = SpeechRequest(
                voice=_opt_str(data, "voice"),
                lang=_opt_str(data, "lang"),
                speed=_opt_float(data, "speed", 1.0),
                format=_opt_str(data, "format") or "pcm",
                sample_rate=_opt_int(data, "sample_rate"),
                word_timings=_opt_bool(data, "word_timings"),
                lexicon=parse_entries(data.get("lexicon")),
            )
        except InvalidInput as exc:
            return dx.Invalid(exc, context, config=True)
        except (TypeError, ValueError) as exc:
            return dx.Invalid(InvalidInput(f"bad config field: {exc}"), context, config=True)
        return dx.Config(request, protocol, context)
    simple: dict[str, dx.ClientMessage] = {
        "flush": dx.Flush(context),
        "close": dx.Close(context),
        "cancel": dx.Cancel(context),
        "ping": dx.Ping(),
    }
    if kind in simple:
        return simple[kind]
    return dx.Invalid(InvalidInput(f"unknown message type {kind!r}"))


def _opt_str(data: dict[str, object], key: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{key} must be a string")


def _opt_float(data: dict[str, object], key: str, default: float) -> float:
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{key} must be a number, got {json.dumps(value)[:40]}")


def _opt_bool(data: dict[str, object], key: str) -> bool:
    value = data.get(key, False)
    if isinstance(value, bool):
        return value
    raise TypeError(f"{key} must be true or false")


def _opt_int(data: dict[str, object], key: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"{key} must be an integer")


def event_json(event: dx.ServerEvent) -> dict[str, object]:
    body = _event_body(event)
    context = getattr(event, "context_id", None)
    if context is not None:
        body["context_id"] = context
    return body


def _event_body(event: dx.ServerEvent) -> dict[str, object]:
    if isinstance(event, dx.Chunk):
        c = event.chunk
        return {
            "type": "chunk",
            "index": c.index,
            "offset_s": round(c.offset_s, 4),
            "duration_s": round(c.duration_s, 4),
            "bytes": len(c.audio),
            "words": [word_json(w) for w in c.words],
            "final": c.final,
        }
    if isinstance(event, dx.Done):
        s = event.summary
        return {
            "type": "done",
            "utterance": event.utterance,
            "audio_s": round(s.audio_s, 4),
            "chunks": s.chunks,
            "ttfa_ms": None if s.ttfa_ms is None else round(s.ttfa_ms, 1),
            "rtf": None if s.rtf is None else round(s.rtf, 4),
            "cancelled": s.cancelled,
            "stall_s": round(s.stall_s, 3),
            "stalls": s.stalls,
        }
    if isinstance(event, dx.Ready):
        return {
            "type": "ready",
            "session_id": event.session_id,
            "sample_rate": event.sample_rate,
            "format": event.format,
        }
    if isinstance(event, dx.Error):
        error: dict[str, object] = {"type": "error", "code": event.code, "message": event.message}
        if event.retry_after_s is not None:
            error["retry_after_s"] = event.retry_after_s
        return error
    return {"type": "pong"}


# --- gRPC: voxserve.v1.VoxServe (protos/voxserve.proto) --------------------------------------------
def grpc_request(msg: pb.SynthesizeRequest | pb.StreamConfig, *, one_message: bool = False) -> SpeechRequest:
    """The request a gRPC message asks for; ``one_message``: the reply holds the whole file (unary)."""
    entries = [
        {field.name: value for field, value in entry.ListFields()} for entry in msg.lexicon
    ]  # absent fields stay absent, as in JSON
    return SpeechRequest(
        lexicon=parse_entries(entries),
        voice=msg.voice or None,
        text=getattr(msg, "text", ""),
        lang=msg.lang if msg.HasField("lang") else None,
        speed=msg.speed if msg.HasField("speed") else 1.0,
        format=msg.format or "pcm",
        sample_rate=msg.sample_rate if msg.HasField("sample_rate") else None,
        word_timings=msg.word_timings,
        input_format=getattr(msg, "input_format", "") or None,
        whole_file=one_message and whole_file(msg.format),
    )


def grpc_words(chunk: EncodedChunk) -> list[pb.WordTiming]:
    return [
        pb.WordTiming(word=w.word, start_s=w.start_s, end_s=w.end_s, char_start=w.char_start, char_end=w.char_end)
        for w in chunk.words
    ]


def grpc_chunk(chunk: EncodedChunk) -> pb.AudioChunk:
    return pb.AudioChunk(
        index=chunk.index,
        offset_s=chunk.offset_s,
        duration_s=chunk.duration_s,
        audio=chunk.audio,
        words=grpc_words(chunk),
        final=chunk.final,
    )


def grpc_client_message(msg: pb.StreamRequest) -> dx.ClientMessage:
    kind = msg.WhichOneof("kind")
    context = msg.context_id or None
    if kind == "config":
        try:
            return dx.Config(grpc_request(msg.config), msg.config.protocol or None, context)
        except InvalidInput as exc:
            return dx.Invalid(exc, context, config=True)
    if kind == "text":
        return dx.Text(msg.text.text, context)
    simple: dict[str | None, dx.ClientMessage] = {
        "flush": dx.Flush(context),
        "close": dx.Close(context),
        "cancel": dx.Cancel(context),
        "ping": dx.Ping(),
    }
    return simple.get(kind) or dx.Invalid(InvalidInput("empty StreamRequest"))


def grpc_event(event: dx.ServerEvent) -> pb.StreamResponse:
    response = _grpc_event_body(event)
    context = getattr(event, "context_id", None)
    if context is not None:
        response.context_id = context
    return response


def _grpc_event_body(event: dx.ServerEvent) -> pb.StreamResponse:
    if isinstance(event, dx.Chunk):
        return pb.StreamResponse(chunk=grpc_chunk(event.chunk))
    if isinstance(event, dx.Done):
        s = event.summary
        return pb.StreamResponse(
            done=pb.Done(
                utterance=event.utterance,
                audio_s=s.audio_s,
                chunks=s.chunks,
                ttfa_ms=s.ttfa_ms or 0.0,
                rtf=s.rtf or 0.0,
                cancelled=s.cancelled,
                stall_s=s.stall_s,
                stalls=s.stalls,
            )
        )
    if isinstance(event, dx.Ready):
        return pb.StreamResponse(
            ready=pb.Ready(session_id=event.session_id, sample_rate=event.sample_rate, format=event.format)
        )
    if isinstance(event, dx.Error):
        error = pb.StreamError(code=event.code, message=event.message, retry_after_s=event.retry_after_s)
        return pb.StreamResponse(error=error)
    return pb.StreamResponse(pong=pb.Pong())


def stall_trailer(summary: UtteranceSummary) -> tuple[tuple[str, str], ...]:
    """The listener's underrun seconds and count, for unary and server-streaming calls (trailing metadata)."""
    return (("voxserve-stall-s", f"{summary.stall_s:.3f}"), ("voxserve-stalls", str(summary.stalls)))
