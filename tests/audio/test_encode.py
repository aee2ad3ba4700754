"""Encoders: every format round-trips, streams bytes early, and rejects unknown formats."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
import soundfile as sf

from voxserve.audio import (
    make_encoder,
    mulaw_decode,
    supported_formats,
)
from voxserve.audio.encode import SUPPORTED_FORMATS
from voxserve.errors import InvalidInput

from ._signals import decode_with_av, peak_frequency, push_in_chunks, sine, speechlike

COMPRESSED = [f for f in ("mp3", "opus", "flac", "aac") if f in supported_formats()]


def _decode(fmt: str, data: bytes, rate: int) -> tuple[np.ndarray, int]:
    if fmt == "pcm":
        return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32767, rate
    if fmt == "mulaw":
        return mulaw_decode(np.frombuffer(data, dtype=np.uint8)), 8000
    return decode_with_av(data)


def _opus_input_rate(data: bytes) -> int:
    head = data.index(b"OpusHead")
    (rate,) = struct.unpack_from("<I", data, head + 12)
    return int(rate)


def test_supported_formats_lists_core_formats() -> None:
    assert set(SUPPORTED_FORMATS) >= {"pcm", "wav", "mp3", "opus", "flac", "mulaw"}
    assert supported_formats() == SUPPORTED_FORMATS


@pytest.mark.parametrize("rate", [24000, 22050])
@pytest.mark.parametrize("fmt", ["pcm", "wav", "mp3", "opus", "flac", "aac", "mulaw"])
def test_round_trip_duration_rate_and_content(fmt: str, rate: int) -> None:
    if fmt not in supported_formats():
        pytest.skip(f"{fmt} encoder not in this ffmpeg build")
    x = sine(440.0, 6.0, rate, amplitude=0.4)
    encoder = make_encoder(fmt, rate)
    parts, tail = push_in_chunks(encoder, x, rate // 10)
    data = b"".join(parts) + tail
    decoded, decoded_rate = _decode(fmt, data, rate)

    expected_rate = {"mulaw": 8000, "opus": 48000}.get(fmt, rate)
    assert decoded_rate == expected_rate
    assert encoder.sample_rate == ({"mulaw": 8000, "opus": 24000}.get(fmt, rate))
    if fmt == "opus":
        assert _opus_input_rate(data) == encoder.sample_rate
    duration = len(decoded) / decoded_rate
    assert duration == pytest.approx(6.0, rel=0.02)
    assert peak_frequency(decoded, decoded_rate) == pytest.approx(440.0, abs=2.0)

    if fmt in ("pcm", "wav", "flac"):
        assert len(decoded) == len(x)
        assert np.max(np.abs(decoded - x)) < 1.5 / 32767
    else:
        middle = decoded[len(decoded) // 4 : 3 * len(decoded) // 4]
        level = 20 * np.log10(np.sqrt(np.mean(middle**2)))
        assert level == pytest.approx(20 * np.log10(0.4 / np.sqrt(2)), abs=1.0)


@pytest.mark.parametrize("fmt", ["mp3", "opus", "flac", "aac", "wav", "pcm", "mulaw"])
def test_streaming_encoders_emit_bytes_before_finish(fmt: str) -> None:
    if fmt not in supported_formats():
        pytest.skip(f"{fmt} encoder not in this ffmpeg build")
    rate = 24000
    x = speechlike(6.0, rate)
    encoder = make_encoder(fmt, rate)
    chunk = rate // 20  # 50 ms pieces, like a live stream
    parts, tail = push_in_chunks(encoder, x, chunk)
    before = sum(len(p) for p in parts)
    assert before > 0.9 * (before + len(tail))
    # Bytes keep coming while audio goes in, not in one burst at the end.
    producing = [i for i, p in enumerate(parts) if p]
    assert producing[0] <= 4  # within the first 250 ms of audio
    assert len(producing) > len(parts) // 4


def test_invalid_format_lists_supported_formats() -> None:
    with pytest.raises(InvalidInput) as info:
        make_encoder("ogg-vorbis", 24000)
    for name in ("pcm", "wav", "mp3", "opus"):
        assert name in info.value.message


def test_format_names_are_case_insensitive() -> None:
    assert make_encoder(" MP3 ", 24000).content_type == "audio/mpeg"


def test_clipping_saturates_instead_of_wrapping() -> None:
    x = np.array([1.7, -1.7, 0.5, 1.0, -1.0], dtype=np.float32)
    pcm = np.frombuffer(make_encoder("pcm", 24000).encode(x), dtype="<i2")
    assert pcm.tolist() == [32767, -32767, 16384, 32767, -32767]
    codes = np.frombuffer(make_encoder("mulaw", 8000).encode(np.full(800, 3.0, dtype=np.float32)), dtype=np.uint8)
    assert np.all(mulaw_decode(codes)[100:700] > 0.9)


def test_streaming_wav_header_is_readable_by_common_decoders() -> None:
    rate = 24000
    x = sine(300.0, 1.0, rate, 0.3)
    encoder = make_encoder("wav", rate)
    data = encoder.encode(x[:100]) + encoder.encode(x[100:]) + encoder.finish()
    assert data[:4] == b"RIFF" and struct.unpack_from("<I", data, 40)[0] == 0xFFFFFFFF
    decoded, decoded_rate = decode_with_av(data)
    assert decoded_rate == rate and len(decoded) == len(x)
    with sf.SoundFile(io.BytesIO(data)) as f:
        assert f.samplerate == rate
        assert f.frames >= len(x)


def test_empty_stream_still_produces_valid_wav() -> None:
    encoder = make_encoder("wav", 16000)
    data = encoder.finish()
    assert len(data) == 44 and data[8:12] == b"WAVE"


def test_encoder_is_finished_once() -> None:
    encoder = make_encoder("mp3", 24000)
    encoder.encode(sine(200.0, 0.5, 24000))
    assert encoder.finish()
    assert encoder.finish() == b""
    with pytest.raises(RuntimeError):
        encoder.encode(sine(200.0, 0.1, 24000))


@pytest.mark.parametrize("fmt", ["pcm", "wav", "mp3", "opus", "flac", "aac", "mulaw"])
@pytest.mark.parametrize("rate", [8000, 16000, 44100, 48000])
def test_every_format_accepts_common_rates_and_an_empty_stream(fmt: str, rate: int) -> None:
    if fmt not in supported_formats():
        pytest.skip(f"{fmt} encoder not in this ffmpeg build")
    make_encoder(fmt, rate).finish()  # cancelled before any audio: must not raise
    encoder = make_encoder(fmt, rate)
    data = encoder.encode(sine(500.0, 0.3, rate)) + encoder.finish()
    assert len(data) > 0


def test_non_positive_rate_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        make_encoder("pcm", 0)
