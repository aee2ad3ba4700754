"""How much of this machine one real-time stream takes, from what its windows cost here.

A stream whose listener plays in real time needs one second of audio per second. Its engine decodes that
audio in windows, each costing ``a + b * n`` seconds at the thread count it runs with
(:class:`voxserve.engines.windowing.WindowCost`, learned at start and from every window since). Under load a
stream keeps ahead of playback with windows up to the session's largest paced window, so one real-time
stream keeps ``threads * (b + a / window)`` cores busy. Its *share* is that over the cores the pool has.

The admission controller adds the shares of the streams it admits and refuses one that would take the
total past the limit; the sum is the load exported to Prometheus and read by autoscalers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamCost:
    """A learned window cost (``a`` per window, ``b`` per audio second) at ``threads`` threads."""

    a: float
    b: float
    threads: int

    def cores_per_stream(self, window_s: float) -> float:
        """Cores a real-time stream keeps busy when it decodes windows of ``window_s`` audio seconds."""
        return self.threads * (self.b + self.a / max(window_s, 1e-3))


def stream_share(cost: StreamCost, window_s: float, cores: int) -> float:
    """The fraction of ``cores`` one real-time stream takes (may exceed 1 on a machine too slow for it)."""
    return cost.cores_per_stream(window_s) / max(cores, 1)
