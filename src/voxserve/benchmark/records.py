"""What one request measured, built from the moments its audio arrived.

The listener model is :mod:`voxserve.stream.playback`: playback starts with the first audio and runs in
real time; each wait for more audio is an underrun. Audio seconds come from the PCM bytes themselves
(16-bit mono), not from what the server says about them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from voxserve.stream.playback import replay

PCM_BYTES_PER_SAMPLE = 2
Arrivals = list[tuple[float, float]]  # (seconds since the request, seconds of audio), in arrival order


class PcmCounter:
    """Turns PCM byte counts, as they arrive, into :data:`Arrivals` (a half sample carries over)."""

    def __init__(self, sample_rate: int, t0: float) -> None:
        self.sample_rate = sample_rate
        self.t0 = t0  # time.perf_counter() when the request was sent
        self.bytes = 0
        self.samples = 0
        self.arrivals: Arrivals = []

    def add(self, byte_count: int) -> None:
        self.bytes += byte_count
        samples = self.bytes // PCM_BYTES_PER_SAMPLE
        if samples > self.samples:
            self.arrivals.append((time.perf_counter() - self.t0, (samples - self.samples) / self.sample_rate))
            self.samples = samples


@dataclass(frozen=True)
class RequestRecord:
    """One request. Times are seconds after ``started_s`` (itself seconds after the run began).

    ``first_audio_s`` counts from the request (whole text) or from the first text fragment sent
    (incremental); ``rtf`` is wall time to the last audio divided by the audio's length.
    """

    transport: str
    voice: str
    chars: int
    started_s: float
    first_audio_s: float | None
    last_audio_s: float | None
    audio_s: float
    rtf: float | None
    underruns: int
    underrun_s: float
    concurrency: int = 0
    error: str | None = None
    underrun_at_s: tuple[float, ...] = field(default=())
    failed_after_s: float | None = None  # a failed request: seconds from the request to its error

    @property
    def ok(self) -> bool:
        return self.error is None and self.first_audio_s is not None

    @property
    def stalled(self) -> bool:
        return self.underruns > 0

    @property
    def played_s(self) -> float:
        """Seconds from the request to the end of its playback: the first audio, then the audio and every
        wait for more of it (0 when no audio came)."""
        if self.first_audio_s is None:
            return 0.0
        return self.first_audio_s + self.audio_s + self.underrun_s

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["underrun_at_s"] = list(self.underrun_at_s)
        return data


def record_from_arrivals(
    arrivals: Arrivals,
    *,
    transport: str,
    voice: str,
    chars: int,
    started_s: float,
    concurrency: int = 0,
    error: str | None = None,
    failed_after_s: float | None = None,
) -> RequestRecord:
    """A record from ``(seconds since the request, audio seconds)`` pairs in arrival order; a failed one
    also says how long the error took (``failed_after_s``: a refusal at capacity should come at once)."""
    clock = replay(arrivals)
    audio_s = clock.audio_s
    first = clock.first_at
    last = arrivals[-1][0] if arrivals else None
    return RequestRecord(
        transport=transport,
        voice=voice,
        chars=chars,
        started_s=started_s,
        first_audio_s=first,
        last_audio_s=last,
        audio_s=audio_s,
        rtf=(last / audio_s) if last is not None and audio_s > 0 else None,
        underruns=len(clock.stalls),
        underrun_s=clock.stall_s,
        concurrency=concurrency,
        error=error,
        underrun_at_s=tuple(round(stall.at_s, 3) for stall in clock.stalls),
        failed_after_s=failed_after_s if error is not None else None,
    )
