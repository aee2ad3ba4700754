"""Audio output and DSP: encoders, resampling, segment joining, loudness."""

from __future__ import annotations

from voxserve.audio.dsp import (
    discontinuity_score,
    equal_power_crossfade,
    fade_in,
    fade_out,
    ms_to_samples,
    silence,
    trim_silence,
)
from voxserve.audio.encode import ALL_FORMATS, Encoder, encoded_rate, make_encoder, supported_formats
from voxserve.audio.joiner import Joiner, JoinOutput, PieceSpan
from voxserve.audio.loudness import LoudnessNormalizer, rms_db, speech_level_db
from voxserve.audio.pcm import float_to_s16, mulaw_decode, mulaw_encode, s16_to_float
from voxserve.audio.resample import StreamingResampler, output_length, resample
from voxserve.audio.wav import wav_bytes, wav_header

__all__ = [
    "ALL_FORMATS",
    "Encoder",
    "JoinOutput",
    "Joiner",
    "LoudnessNormalizer",
    "PieceSpan",
    "StreamingResampler",
    "discontinuity_score",
    "encoded_rate",
    "equal_power_crossfade",
    "fade_in",
    "fade_out",
    "float_to_s16",
    "make_encoder",
    "ms_to_samples",
    "mulaw_decode",
    "mulaw_encode",
    "output_length",
    "resample",
    "rms_db",
    "s16_to_float",
    "silence",
    "speech_level_db",
    "supported_formats",
    "trim_silence",
    "wav_bytes",
    "wav_header",
]


def __getattr__(name: str) -> tuple[str, ...]:
    # SUPPORTED_FORMATS probes ffmpeg, so it is computed on first use rather than at import.
    if name == "SUPPORTED_FORMATS":
        return supported_formats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
