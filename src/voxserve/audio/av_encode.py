"""Streaming compressed encoders on PyAV (ffmpeg): MP3, Ogg/Opus, FLAC and ADTS AAC.

The muxer writes into an in-memory sink with ``flush_packets`` on, so encoded bytes come out as
soon as the codec has whole frames; the sink is not seekable, so muxers never rewrite headers
that were already sent. A ``whole`` encoder instead keeps everything until ``finish`` and lets the
muxer rewrite its header: a streamed FLAC file says its length is unknown, which some readers
(libsndfile, hence ``soundfile``) refuse.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import av
import av.audio.stream
import numpy as np

from voxserve.audio.pcm import as_mono_float32, float_to_s16
from voxserve.audio.resample import StreamingResampler
from voxserve.types import FloatAudio


@dataclass(frozen=True)
class AvFormat:
    """How one output format maps onto an ffmpeg muxer and encoder."""

    name: str
    container: str
    codec: str
    content_type: str
    sample_format: str  # "flt" or "s16": what we hand the encoder
    rates: tuple[int, ...] | None  # rates the encoder accepts; None = any
    bit_rate: int | None = None
    container_options: dict[str, str] = field(default_factory=dict)


_STREAMING = {"flush_packets": "1"}

AV_FORMATS: dict[str, AvFormat] = {
    "mp3": AvFormat(
        "mp3",
        "mp3",
        "libmp3lame",
        "audio/mpeg",
        "flt",
        (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000),
        64_000,
        {**_STREAMING, "id3v2_version": "0", "write_xing": "0"},
    ),
    "opus": AvFormat(
        "opus",
        "ogg",
        "libopus",
        "audio/ogg; codecs=opus",
        "flt",
        (8000, 12000, 16000, 24000, 48000),
        32_000,
        {**_STREAMING, "page_duration": "20000"},
    ),
    "flac": AvFormat("flac", "flac", "flac", "audio/flac", "s16", None, None, dict(_STREAMING)),
    "aac": AvFormat(
        "aac",
        "adts",
        "aac",
        "audio/aac",
        "flt",
        (7350, 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 64000, 88200, 96000),
        64_000,
        dict(_STREAMING),
    ),
}


def codec_available(codec: str) -> bool:
    try:
        av.codec.Codec(codec, "w")
    except ValueError:  # av's UnknownCodecError
        return False
    return True


def encoder_rate(fmt: AvFormat, sample_rate: int) -> int:
    """The rate the encoder runs at: the input rate if allowed, else the next higher allowed one."""
    if fmt.rates is None or sample_rate in fmt.rates:
        return sample_rate
    higher = [rate for rate in fmt.rates if rate >= sample_rate]
    return min(higher) if higher else max(fmt.rates)


class _Sink:
    """Write-only, non-seekable file object collecting what the muxer emits."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


class AvEncoder:
    """One output stream of ``fmt``; feed float32 mono at ``input_rate``."""

    def __init__(self, fmt: AvFormat, input_rate: int, bit_rate: int | None = None, *, whole: bool = False) -> None:
        self.format = fmt.name
        self.content_type = fmt.content_type
        self.sample_rate = encoder_rate(fmt, input_rate)
        self._fmt = fmt
        self._resampler = StreamingResampler(input_rate, self.sample_rate) if self.sample_rate != input_rate else None
        self._sink: _Sink | io.BytesIO = io.BytesIO() if whole else _Sink()
        options = {k: v for k, v in fmt.container_options.items() if not (whole and k == "flush_packets")}
        self._container = av.open(self._sink, mode="w", format=fmt.container, options=options)
        stream = self._container.add_stream(fmt.codec, rate=self.sample_rate)
        assert isinstance(stream, av.audio.stream.AudioStream)
        self._stream: av.audio.stream.AudioStream = stream
        context = stream.codec_context
        context.layout = "mono"
        context.format = fmt.sample_format
        rate = bit_rate or fmt.bit_rate
        if rate:
            context.bit_rate = rate
        self._closed = False

    def encode(self, samples: FloatAudio) -> bytes:
        if self._closed:
            raise RuntimeError(f"{self.format} encoder already finished")
        x = as_mono_float32(samples)
        if self._resampler is not None:
            x = self._resampler.process(x)
        self._write(x)
        return self._sink.take() if isinstance(self._sink, _Sink) else b""

    def finish(self) -> bytes:
        if self._closed:
            return b""
        if self._resampler is not None:
            self._write(self._resampler.flush())
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        self._closed = True
        return self._sink.take() if isinstance(self._sink, _Sink) else self._sink.getvalue()

    def _write(self, x: FloatAudio) -> None:
        if len(x) == 0:
            return
        if self._fmt.sample_format == "s16":
            data: np.ndarray = float_to_s16(x)[None, :]
        else:
            data = np.clip(x, -1.0, 1.0)[None, :]
        frame = av.AudioFrame.from_ndarray(data, format=self._fmt.sample_format, layout="mono")
        frame.sample_rate = self.sample_rate
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
