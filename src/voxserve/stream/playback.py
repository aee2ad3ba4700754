"""A listener's playback, reconstructed from when audio arrived: where it would have run dry.

The listener model is the one the scheduler and the load tool share: playback starts at the first
audio and runs in real time; when the audio received so far runs out, the listener waits (a stall, or
underrun) and resumes the moment the next audio arrives. The end of the stream is not a stall, and
neither is a wait for the client's own text: when a stream has spoken all the text it was sent and its
listener runs dry before more comes (a voice agent's LLM pausing), playback starts again at the next
audio, as at the first (:meth:`PlaybackClock.text_arrived`). Counting that wait would charge the server
for its client, and the admission limit learns from these stalls.

The same clock gives a playing stream's deadline: :attr:`PlaybackClock.runs_dry_at` is the moment its
listener would run out of audio, which is when the next audio is due.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Stall:
    """One underrun: the listener ran dry at ``at_s`` (seconds of audio played) and waited ``wait_s``."""

    at_s: float
    wait_s: float


class PlaybackClock:
    """Follows one stream's audio as it arrives (``now`` in seconds on any monotonic clock)."""

    def __init__(self) -> None:
        self.first_at: float | None = None  # when the first audio arrived (playback started)
        self.runs_dry_at: float | None = None  # when the audio received so far is used up (None: not playing)
        self.audio_s = 0.0
        self.stalls: list[Stall] = []

    @property
    def stall_s(self) -> float:
        """Seconds the listener spent waiting after playback began."""
        return sum(stall.wait_s for stall in self.stalls)

    @property
    def stalled(self) -> bool:
        return bool(self.stalls)

    @property
    def playing(self) -> bool:
        """Whether the listener plays: from the first audio on, but not after it waited for text until
        the audio that text brings (:meth:`text_arrived`)."""
        return self.runs_dry_at is not None

    def text_arrived(self, now: float) -> bool:
        """New text arrived at ``now`` for a stream that had spoken all it was sent. If its listener has
        run dry by then, it was waiting for the client, not the server: playback starts again with the
        next audio, as at the first, and that wait is no stall. Returns whether it did."""
        if self.runs_dry_at is None or self.runs_dry_at > now:
            return False
        self.runs_dry_at = None
        return True

    def on_audio(self, now: float, seconds: float) -> float:
        """Record ``seconds`` of audio arriving at ``now``; returns the wait it ended (0 when in time)."""
        if seconds <= 0:
            return 0.0
        wait = 0.0
        if self.runs_dry_at is None:
            self.first_at = now if self.first_at is None else self.first_at
            self.runs_dry_at = now
        elif now > self.runs_dry_at:
            wait = now - self.runs_dry_at
            self.stalls.append(Stall(self.audio_s, wait))
            self.runs_dry_at = now
        self.runs_dry_at += seconds
        self.audio_s += seconds
        return wait

    def ahead_s(self, now: float) -> float:
        """Audio received but not yet played at ``now`` (0 before the first audio or once dry)."""
        if self.runs_dry_at is None:
            return 0.0
        return max(0.0, self.runs_dry_at - now)


def replay(arrivals: Iterable[tuple[float, float]]) -> PlaybackClock:
    """A clock fed ``(arrival time, audio seconds)`` pairs in order of arrival."""
    clock = PlaybackClock()
    for now, seconds in arrivals:
        clock.on_audio(now, seconds)
    return clock
