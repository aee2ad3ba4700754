"""The numeric bounds of a request, each written once.

The request policy (:mod:`voxserve.policy`) checks them when a request arrives, on every transport and
in the CLI. A layer further down that must still refuse out-of-range values when called directly (an
engine given a speed, a session or the text frontend given text) calls the same check here, so the bound
and its message exist once. This module sits at the bottom of the package: it imports only the errors.
"""

from __future__ import annotations

from voxserve.errors import InputTooLarge, InvalidInput

# Speaking rates every engine accepts: both engines scale their durations by 1 / speed, and beyond these
# bounds their voices break up (too fast) or drone (too slow).
MIN_SPEED, MAX_SPEED = 0.5, 2.0

# Output sample rates a client may ask for (every transport and the CLI); audio is resampled to them.
MIN_OUTPUT_RATE, MAX_OUTPUT_RATE = 8000, 48000

# Characters in a voice name or blend (``af_heart:0.7+af_bella:0.3``): a blend of a dozen voices fits, and
# errors and the ``X-Voice`` header that repeat it stay small.
MAX_VOICE_CHARS = 256

# Elements nested inside one another in an SSML document. Real documents nest a handful; the reader
# walks the tree recursively, and a deeper one would exhaust Python's stack.
MAX_SSML_DEPTH = 64


def check_speed(speed: float) -> None:
    if not MIN_SPEED <= speed <= MAX_SPEED:
        raise InvalidInput(f"speed must be between {MIN_SPEED} and {MAX_SPEED}, got {speed}")


def check_sample_rate(rate: int | None) -> None:
    """``None`` (the voice's own rate) is always fine."""
    if rate is not None and not MIN_OUTPUT_RATE <= rate <= MAX_OUTPUT_RATE:
        raise InvalidInput(f"sample_rate must be between {MIN_OUTPUT_RATE} and {MAX_OUTPUT_RATE} Hz, got {rate}")


def check_input_length(chars: int, limit: int) -> None:
    """Refuse an utterance of ``chars`` characters (all its text so far) past ``limit`` (``max_input_chars``)."""
    if chars > limit:
        raise InputTooLarge(f"input is {chars} characters; the limit is {limit}; split it into several requests")


def check_ssml_depth(depth: int) -> None:
    if depth > MAX_SSML_DEPTH:
        raise InvalidInput(f"SSML elements are nested {depth} deep; the limit is {MAX_SSML_DEPTH}: flatten it")


def check_voice_spec(spec: str) -> None:
    if len(spec) > MAX_VOICE_CHARS:
        raise InvalidInput(f"a voice name or blend is at most {MAX_VOICE_CHARS} characters, got {len(spec)}")
