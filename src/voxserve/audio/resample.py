"""Sample-rate conversion: one-shot (scipy polyphase) and a seamless streaming resampler.

Both use the same linear-phase Kaiser low-pass that ``scipy.signal.resample_poly`` designs, and
both are delay-compensated: output sample ``m`` sits at input time ``m * from_rate / to_rate``.
A stream resampled chunk by chunk therefore equals the one-shot result (to float rounding).
"""

from __future__ import annotations

from math import gcd

import numpy as np
import numpy.typing as npt
from scipy.signal import firwin, resample_poly

from voxserve.audio.pcm import as_mono_float32
from voxserve.errors import InvalidInput
from voxserve.types import FloatAudio

_KAISER_BETA = 5.0
_HALF_LEN_PER_RATE = 10
_BLOCK = 8192  # output samples computed per step


def _ratio(from_rate: int, to_rate: int) -> tuple[int, int]:
    if from_rate <= 0 or to_rate <= 0:
        raise InvalidInput(f"sample rates must be positive, got {from_rate} → {to_rate}")
    common = gcd(from_rate, to_rate)
    return to_rate // common, from_rate // common


def output_length(n_in: int, from_rate: int, to_rate: int) -> int:
    """Samples produced for ``n_in`` input samples (ceil of ``n_in * to / from``)."""
    up, down = _ratio(from_rate, to_rate)
    return -(-n_in * up // down)


def resample(samples: npt.ArrayLike, from_rate: int, to_rate: int) -> FloatAudio:
    """Resample a whole mono signal. Returns float32; a copy even when the rates match."""
    x = as_mono_float32(samples)
    up, down = _ratio(from_rate, to_rate)
    if up == down:
        return x.copy()
    if len(x) == 0:
        return np.zeros(0, dtype=np.float32)
    y = resample_poly(x.astype(np.float64), up, down, window=("kaiser", _KAISER_BETA))
    return np.asarray(y, dtype=np.float32)


class StreamingResampler:
    """Resample a stream chunk by chunk with no seams.

    ``process`` returns every output sample whose filter support is already complete, so it
    holds back only about ``10 * max(up, down) / up`` input samples (≈ 1 ms for 24 → 8 kHz).
    ``flush`` emits the rest, padding the end with zeros like the one-shot form.
    """

    def __init__(self, from_rate: int, to_rate: int) -> None:
        self.from_rate = from_rate
        self.to_rate = to_rate
        self._up, self._down = _ratio(from_rate, to_rate)
        self._passthrough = self._up == self._down
        max_rate = max(self._up, self._down)
        self._half_len = _HALF_LEN_PER_RATE * max_rate
        if self._passthrough:
            taps = np.ones(1, dtype=np.float64)
        else:
            taps = firwin(2 * self._half_len + 1, 1.0 / max_rate, window=("kaiser", _KAISER_BETA)) * self._up
        self._n_taps = -(-len(taps) // self._up)
        padded = np.zeros(self._n_taps * self._up, dtype=np.float64)
        padded[: len(taps)] = taps
        # Polyphase table: phase r, tap t → h[r + t * up].
        self._phases: npt.NDArray[np.float64] = padded.reshape(self._n_taps, self._up).T.copy()
        # Buffer of input samples; global index of buf[0] is _buf_start. Leading zeros model the
        # signal before the stream starts.
        self._buf = np.zeros(self._n_taps, dtype=np.float64)
        self._buf_start = -self._n_taps
        self._n_in = 0
        self._next_out = 0
        self._flushed = False

    @property
    def ratio(self) -> float:
        return self.to_rate / self.from_rate

    def process(self, samples: npt.ArrayLike) -> FloatAudio:
        x = as_mono_float32(samples)
        if self._flushed:
            raise RuntimeError("StreamingResampler.process called after flush")
        if self._passthrough:
            return x.copy()
        if len(x):
            self._buf = np.concatenate([self._buf, x.astype(np.float64)])
            self._n_in += len(x)
        # Output m needs inputs up to index (m * down + half_len) // up, all of which must be in.
        ready = -(-(self._n_in * self._up - self._half_len) // self._down)
        return self._emit(max(ready, self._next_out))

    def flush(self) -> FloatAudio:
        """Emit the remaining output (the stream's end is treated as silence). Call once."""
        if self._flushed:
            return np.zeros(0, dtype=np.float32)
        self._flushed = True
        if self._passthrough:
            return np.zeros(0, dtype=np.float32)
        total = output_length(self._n_in, self.from_rate, self.to_rate)
        self._buf = np.concatenate([self._buf, np.zeros(self._n_taps + 1, dtype=np.float64)])
        return self._emit(max(total, self._next_out))

    def _emit(self, end: int) -> FloatAudio:
        start = self._next_out
        if end <= start:
            return np.zeros(0, dtype=np.float32)
        out = np.empty(end - start, dtype=np.float32)
        taps = np.arange(self._n_taps, dtype=np.int64)
        for block in range(start, end, _BLOCK):  # bounded temporaries for long inputs
            m = np.arange(block, min(block + _BLOCK, end), dtype=np.int64)
            centre = m * self._down + self._half_len
            base = centre // self._up
            phase = centre - base * self._up
            values = self._buf[base[:, None] - taps[None, :] - self._buf_start]
            out[block - start : block - start + len(m)] = np.einsum("mt,mt->m", values, self._phases[phase])
        self._next_out = end
        self._trim_buffer()
        return out

    def _trim_buffer(self) -> None:
        oldest_needed = (self._next_out * self._down + self._half_len) // self._up - (self._n_taps - 1)
        drop = oldest_needed - self._buf_start
        if drop > 0:
            self._buf = self._buf[drop:]
            self._buf_start += drop
