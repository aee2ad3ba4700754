"""How large each decoder window of a stream can be so that its audio keeps ahead of playback.

A window of ``n`` audio seconds costs about ``a + b * n`` seconds of work: ``b`` per audio second, ``a``
per window (the context decoded on both sides and the call itself). Each windowed engine learns ``a``
and ``b`` from the windows it decodes, per thread count (:class:`voxserve.engines.windowing.WindowCost`).
With ``L`` streams per job slot a window takes ``L * (a + b * n)`` of wall time, so only windows longer
than the break-even ``n* = L * a / (1 - L * b)`` add to the audio ahead of playback.

* Each window is cut just before it is decoded, as large as can be done within ``1 / MARGIN`` of the
  audio then ahead of playback (:func:`next_window_s`): the buffer grows by itself, and larger windows
  waste less on context.
* A stream's first window has nothing ahead of it: it is small for fast first audio, but at least
  ``START_MARGIN * n*`` (:func:`start_window_s`), so that the window after it can be done in time and
  still at least break even. No window is smaller than that: with too little ahead a stall is coming
  anyway, and a smaller window would only lose more ground. Alone on a fast machine ``n*`` is below
  the configured first window, which then stands; streams sharing the cores start with larger ones.
"""

from __future__ import annotations

# Near capacity the break-even window grows as 1 / (1 - L*b), so a slightly high estimate of b asks for
# huge windows (first audio after seconds) that stall anyway; beyond 2 s a larger start doesn't pay.
GAINING_CAP_S = 2.0
START_MARGIN = 1.5
# a window must be done when 2/3 of the audio ahead has played: room for noise on a shared box
MARGIN = 1.5


def break_even_s(cost: tuple[float, float], load: float) -> float:
    """The window that exactly keeps pace with playback (``inf`` when nothing can)."""
    a, b = cost
    if load * b >= 0.9:
        return float("inf")
    return load * a / (1.0 - load * b)


def start_window_s(first_s: float, max_s: float, cost: tuple[float, float] | None, load: float) -> float:
    """A stream's first window: ``first_s``, or enough above break-even to gain (at most
    :data:`GAINING_CAP_S` and ``max_s``). ``first_s`` while nothing is learned."""
    if cost is None:
        return min(first_s, max_s)
    gaining = min(START_MARGIN * break_even_s(cost, load), GAINING_CAP_S)
    return min(max(first_s, gaining), max_s)


def next_window_s(ahead_s: float, first_s: float, max_s: float, cost: tuple[float, float], load: float) -> float:
    """The next window of a stream with ``ahead_s`` of audio not yet played, at most ``max_s``.

    The largest window done within ``ahead_s / MARGIN``, but never smaller than a first window
    (:func:`start_window_s`): with too little ahead a stall is coming anyway, and a smaller window
    would only lose more ground.
    """
    a, b = cost
    affordable = (max(ahead_s, 0.0) / (MARGIN * load) - a) / b
    return min(max(affordable, start_window_s(first_s, max_s, cost, load)), max_s)
