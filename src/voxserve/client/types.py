"""The client's typed results: what a voxserve server sends, as frozen values (docs/protocol.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WordTiming:
    """Where a word is heard, in seconds from the start of its utterance or context.

    ``char_start``/``char_end`` point into the text as the client sent it, when the server gives them."""

    word: str
    start_s: float
    end_s: float
    char_start: int | None = None
    char_end: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WordTiming:
        return cls(
            str(data["word"]),
            float(data["start_s"]),
            float(data["end_s"]),
            data.get("char_start"),
            data.get("char_end"),
        )


@dataclass(frozen=True)
class AudioFrame:
    """One chunk of audio in the requested format, with the words that start in it."""

    audio: bytes
    offset_s: float
    duration_s: float
    words: tuple[WordTiming, ...]
    final: bool
    index: int = 0
    context_id: str | None = None


@dataclass(frozen=True)
class Ready:
    """The server accepted a config: the audio will come at ``sample_rate`` in ``format``."""

    session_id: str
    sample_rate: int
    format: str


@dataclass(frozen=True)
class Done:
    """A context (or utterance) has ended; ``chunks`` and ``audio_s`` count what was sent for it, and
    ``stalls`` / ``stall_s`` the times and seconds its listener, playing from the first audio in real
    time, would have waited for the server (docs/protocol.md)."""

    context_id: str | None
    utterance: int
    audio_s: float
    chunks: int
    ttfa_ms: float | None
    cancelled: bool
    rtf: float | None = None
    stall_s: float = 0.0
    stalls: int = 0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Done:
        return cls(
            data.get("context_id"),
            int(data.get("utterance", 0)),
            float(data.get("audio_s", 0.0)),
            int(data.get("chunks", 0)),
            data.get("ttfa_ms"),
            bool(data.get("cancelled", False)),
            data.get("rtf"),
            float(data.get("stall_s", 0.0)),
            int(data.get("stalls", 0)),
        )


@dataclass(frozen=True)
class Speech:
    """A whole synthesized utterance."""

    audio: bytes
    format: str
    sample_rate: int
    words: tuple[WordTiming, ...]


@dataclass(frozen=True)
class Voice:
    id: str
    engine: str
    lang: str
    gender: str
    sample_rate: int


class VoxServeError(Exception):
    """The server refused or failed a request, or could not be reached (``unavailable``, ``timeout``).
    ``status``: the HTTP status or WebSocket close code, when there is one; ``retry_after_s``: how long the
    server asked to wait before trying again."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        context_id: str | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s
        self.context_id = context_id

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> VoxServeError:
        """The error an ``error`` event of the streaming protocol names."""
        retry = event.get("retry_after_s")
        return cls(
            str(event.get("code", "error")),
            str(event.get("message", event)),
            retry_after_s=float(retry) if retry is not None else None,
            context_id=event.get("context_id"),
        )

    @property
    def retryable(self) -> bool:
        """Busy or restarting: HTTP 503, ``overloaded``/``shutting_down``/``not_ready``, no connection at all
        (``unavailable``), or a WebSocket closed as full (1013), going away (1001: a replica draining),
        restarting (1012) or lost without a close (1006: the server or the network went down): try again."""
        return self.status in (503, 1001, 1006, 1012, 1013) or self.code in (
            "overloaded",
            "shutting_down",
            "not_ready",
            "unavailable",
        )


class SourceWords:
    """The words of one context (or utterance) as the text the client sent, across all its chunks.

    Each word comes with the characters of the sent text it was read from, widened to the punctuation
    around it ("there," and "(today)."), so that the pieces put together give the text back as sent.
    The words spoken for one piece of text ("five", "dollars", "and", "fifty", "cents" for "$5.50") may
    come in different chunks: only the first is given, with "$5.50"; the others are dropped. A word
    without a span is given as spoken."""

    def __init__(self) -> None:
        self._last: tuple[int, int] | None = None  # the span given last
        self._end = 0  # where the text given so far ends

    def __call__(self, words: Iterable[WordTiming], text: str) -> list[tuple[WordTiming, str]]:
        found: list[tuple[WordTiming, str]] = []
        for word in words:
            if word.char_start is None or word.char_end is None:
                found.append((word, word.word))
                continue
            span = (word.char_start, word.char_end)
            if span == self._last:
                continue
            self._last = span
            start, end = span
            while start > self._end and not text[start - 1].isspace():  # an opening quote or bracket
                start -= 1
            while end < len(text) and not text[end].isspace() and not text[end].isalnum():  # "," "." ")"
                end += 1
            self._end = max(self._end, end)
            found.append((word, text[start:end]))
        return found


def words_of(items: list[dict[str, Any]] | None) -> tuple[WordTiming, ...]:
    return tuple(WordTiming.from_json(item) for item in items or ())
