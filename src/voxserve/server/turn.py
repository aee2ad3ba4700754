"""One utterance of a duplex connection, from its first text to its ``done`` (see :mod:`.duplex`)."""

from __future__ import annotations

import asyncio

from voxserve.limits import check_input_length
from voxserve.policy import SpeechRequest
from voxserve.server.utterance import Utterance, UtteranceSummary


class Turn:
    """One utterance of a connection. Its text is kept until its turn comes, then fed to its session;
    until then it holds no stream slot and costs no CPU."""

    def __init__(self, request: SpeechRequest, max_chars: int, cancelled: bool = False) -> None:
        self.request = request
        self.utterance: Utterance | None = None
        self.cancelled = cancelled
        self.done = False
        self._held: list[str | None] = []  # text, or None for a flush
        self._closed = cancelled
        self._chars = 0
        self._max_chars = max_chars
        self._changed = asyncio.Event()

    @property
    def has_text(self) -> bool:
        return any(self._held)

    async def wait_for_text(self) -> None:
        """Until the utterance has text, or is closed or cancelled (an empty one needs no session)."""
        while not (self.has_text or self._closed or self.cancelled):
            self._changed.clear()
            await self._changed.wait()

    def push_text(self, text: str) -> None:
        if self.utterance is not None:
            self.utterance.push_text(text)
            return
        self._chars += len(text)
        check_input_length(self._chars, self._max_chars)  # held text is bounded before a session exists
        self._held.append(text)
        self._changed.set()

    def flush(self) -> None:
        if self.utterance is not None:
            self.utterance.flush()
        else:
            self._held.append(None)

    def close(self) -> None:
        self._closed = True
        self._changed.set()
        if self.utterance is not None:
            self.utterance.close()

    def cancel(self) -> None:
        self.cancelled = True
        self._changed.set()
        if self.utterance is not None:
            self.utterance.cancel()

    def start(self, utterance: Utterance) -> None:
        """Hand the kept text, flushes and close over to the utterance's session."""
        self.utterance = utterance
        for item in self._held:
            if item is None:
                utterance.flush()
            else:
                utterance.push_text(item)
        self._held.clear()
        if self._closed:
            utterance.close()

    def summary(self) -> UtteranceSummary:
        if self.utterance is not None:
            return self.utterance.summary()
        return UtteranceSummary(0.0, 0, None, None, self.cancelled)
