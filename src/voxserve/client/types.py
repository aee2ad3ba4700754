"""The client's typed results: what a voxserve server sends, as frozen values (docs/protocol.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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

    @property
    def retryable(self) -> bool:
        """Busy or restarting (HTTP 503, WebSocket 1013, ``overloaded``/``shutting_down``, or no connection
        at all: ``unavailable``): try again."""
        return self.status in (503, 1013) or self.code in ("overloaded", "shutting_down", "not_ready", "unavailable")


def source_words(words: Iterable[WordTiming], text: str) -> Iterator[tuple[WordTiming, str]]:
    """Each word with the characters of ``text`` (the text sent) it was read from, once per span: the
    words spoken for one piece of text ("five", "dollars" for "$5") yield only the first, with "$5".
    Words without a span yield their spoken form."""
    last: tuple[int, int] | None = None
    for word in words:
        if word.char_start is None or word.char_end is None:
            yield word, word.word
            continue
        span = (word.char_start, word.char_end)
        if span != last:
            last = span
            yield word, text[word.char_start : word.char_end]


def words_of(items: list[dict[str, Any]] | None) -> tuple[WordTiming, ...]:
    return tuple(WordTiming.from_json(item) for item in items or ())
