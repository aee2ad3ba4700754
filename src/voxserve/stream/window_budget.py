"""How large a stream's decoder windows can be so that its audio keeps ahead of playback.

A window of ``n`` audio seconds costs about ``a + b * n`` seconds of work: ``b`` per audio second, ``a``
per window (the context decoded on both sides and the call itself). Each windowed engine learns ``a``
and ``b`` from the windows it decodes (:class:`voxserve.engines.windowing.WindowCost`).

* A stream's first window is small for fast first audio. Each later window must be done before the
  audio already out has played; with ``L`` streams sharing a worker a window of ``n`` seconds takes
  ``L * (a + b * n)`` of wall time, so only windows longer than ``L * a / (1 - L * b)`` add to the
  buffer. On 2 cores Kokoro has ``a`` ~0.16 s and ``b`` ~0.36: alone, anything over ~0.25 s plays
  through; two streams need ~1.2 s windows from the start, or every small window loses ground and
  playback stalls (measured: 2.6–3.5 s of stalls). :func:`start_window_s` picks that size.
* Later segments are made while earlier audio plays: :func:`segment_window_s` gives them the largest
  window the stream can finish before its buffered audio runs out.
"""

from __future__ import annotations

# Near capacity the gaining window grows as 1 / (1 - L*b), so a slightly high estimate of b asks for
# huge windows (first audio after seconds) that stall anyway; beyond 2 s a larger start doesn't pay.
GAINING_CAP_S = 2.0


def gaining_window_s(cost: tuple[float, float] | None, load: float) -> float:
    """The smallest window with which ``load`` streams per worker gain on playback, with margin.

    ``L * a / (1 - L * b)`` breaks even; twice that gains ``L * a`` seconds of buffer per window
    (1.3x left the two-stream bench stalling ~1 s). 0 when alone or nothing is learned yet; at most
    :data:`GAINING_CAP_S`.
    """
    if cost is None or load <= 1.0:
        return 0.0
    a, b = cost
    if load * b >= 0.9:
        return GAINING_CAP_S
    return min(2.0 * load * a / (1.0 - load * b), GAINING_CAP_S)


def start_window_s(first_s: float, max_s: float, cost: tuple[float, float] | None, load: float) -> float:
    """A stream's first window: ``first_s``, or the gaining window (up to ``max_s``) when the stream
    shares its worker."""
    return min(max(first_s, gaining_window_s(cost, load)), max_s)


def segment_window_s(
    first_s: float,
    max_s: float,
    *,
    audio_s: float,
    played_s: float,
    compute_s: float,
    load: float,
    cost: tuple[float, float] | None = None,
) -> float | None:
    """First decoder window for a later segment of a stream (``None``: the engine's largest).

    Later segments are made while earlier audio plays, so they want the largest windows (fewest seams,
    least overhead); but a window is only started if it can be finished, with a 2.5x margin, before
    the audio already ahead of playback runs out. Its cost is estimated from the stream's own compute
    per audio second so far, times ``load`` (streams sharing each worker): a 4 s Kokoro window is ~1.6 s
    of work, and two streams that each start one with less than that buffered both stall. It is never
    smaller than a window that gains on playback (:func:`gaining_window_s`): a smaller one would only
    lose more ground.
    """
    ahead = audio_s - played_s
    cost_per_s = (compute_s / audio_s if audio_s > 0 else 1.0) * load * 2.5
    affordable = ahead / max(cost_per_s, 1e-3)
    floor = min(max(first_s, gaining_window_s(cost, load)), max_s)
    return None if affordable >= max_s else max(floor, affordable)
