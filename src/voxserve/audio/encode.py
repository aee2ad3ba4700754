"""The output formats a client may ask for, behind one small streaming interface.

``make_encoder(fmt, sample_rate)`` returns a fresh encoder per stream. ``encode`` may return
``b""`` while a codec buffers; ``finish`` returns the tail and must be called once at the end.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

from voxserve.audio.av_encode import AV_FORMATS, AvEncoder, codec_available, encoder_rate
from voxserve.audio.pcm import as_mono_float32, float_to_s16, mulaw_encode
from voxserve.audio.resample import StreamingResampler
from voxserve.audio.wav import wav_header
from voxserve.errors import InvalidInput
from voxserve.types import FloatAudio

ALL_FORMATS = ("pcm", "wav", "mp3", "opus", "flac", "aac", "mulaw")
MULAW_RATE = 8000


class Encoder(Protocol):
    """A per-stream encoder. ``sample_rate`` is the rate of the encoded output."""

    format: str
    content_type: str
    sample_rate: int

    def encode(self, samples: FloatAudio) -> bytes: ...

    def finish(self) -> bytes: ...


class PcmEncoder:
    """Raw signed 16-bit little-endian mono."""

    format = "pcm"
    content_type = "audio/pcm"

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate

    def encode(self, samples: FloatAudio) -> bytes:
        return float_to_s16(as_mono_float32(samples)).astype("<i2").tobytes()

    def finish(self) -> bytes:
        return b""


class WavStreamEncoder:
    """WAV whose header (with unknown sizes) goes out with the first bytes, then raw PCM."""

    format = "wav"
    content_type = "audio/wav"

    def __init__(self, sample_rate: int) -> None:
        self.sample_rate = sample_rate
        self._header_sent = False

    def encode(self, samples: FloatAudio) -> bytes:
        body = float_to_s16(as_mono_float32(samples)).astype("<i2").tobytes()
        if self._header_sent:
            return body
        self._header_sent = True
        return wav_header(self.sample_rate) + body

    def finish(self) -> bytes:
        return self.encode(as_mono_float32([])) if not self._header_sent else b""


class MulawEncoder:
    """Raw G.711 μ-law bytes at 8 kHz (input is resampled as needed)."""

    format = "mulaw"
    content_type = "audio/basic"
    sample_rate = MULAW_RATE

    def __init__(self, input_rate: int) -> None:
        self._resampler = StreamingResampler(input_rate, MULAW_RATE)

    def encode(self, samples: FloatAudio) -> bytes:
        return mulaw_encode(self._resampler.process(samples)).tobytes()

    def finish(self) -> bytes:
        return mulaw_encode(self._resampler.flush()).tobytes()


@lru_cache(maxsize=1)
def supported_formats() -> tuple[str, ...]:
    """Formats this process can produce (compressed ones only when ffmpeg has the encoder)."""
    return tuple(name for name in ALL_FORMATS if name not in AV_FORMATS or codec_available(AV_FORMATS[name].codec))


def __getattr__(name: str) -> tuple[str, ...]:
    # SUPPORTED_FORMATS is computed on first use, not at import (it probes ffmpeg).
    if name == "SUPPORTED_FORMATS":
        return supported_formats()
    raise AttributeError(name)


def make_encoder(fmt: str, sample_rate: int, *, bit_rate: int | None = None, whole: bool = False) -> Encoder:
    """A new streaming encoder for ``fmt`` fed with mono float32 at ``sample_rate``. ``whole``: a
    compressed format gives all its bytes at ``finish``, as one file with a complete header."""
    name = fmt.strip().lower()
    formats = supported_formats()
    if name not in formats:
        raise InvalidInput(f"unsupported audio format {fmt!r}; supported formats: {', '.join(formats)}")
    if sample_rate <= 0:
        raise InvalidInput(f"sample rate must be positive, got {sample_rate}")
    if name == "pcm":
        return PcmEncoder(sample_rate)
    if name == "wav":
        return WavStreamEncoder(sample_rate)
    if name == "mulaw":
        return MulawEncoder(sample_rate)
    return AvEncoder(AV_FORMATS[name], sample_rate, bit_rate, whole=whole)


def content_type(fmt: str) -> str:
    """The media type an HTTP response of ``fmt`` declares."""
    name = fmt.strip().lower()
    if name in AV_FORMATS:
        return AV_FORMATS[name].content_type
    plain = {"pcm": PcmEncoder.content_type, "wav": WavStreamEncoder.content_type, "mulaw": MulawEncoder.content_type}
    return plain[name]


def encoded_rate(fmt: str, sample_rate: int) -> int:
    """The rate ``fmt`` is sent at when fed ``sample_rate``: μ-law is always 8 kHz, and Opus/MP3/AAC take
    the nearest rate their codec supports (what a client must announce to its player)."""
    name = fmt.strip().lower()
    if name == "mulaw":
        return MULAW_RATE
    if name in AV_FORMATS:
        return encoder_rate(AV_FORMATS[name], sample_rate)
    return sample_rate
