"""The request policy: what a request may ask for, and what it resolves to. One place for every rule.

Every way in (HTTP, WebSocket, gRPC, the duplex protocols and ``voxserve say``) builds a
:class:`SpeechRequest` and hands it to :meth:`RequestPolicy.resolve`, which

- reads SSML input as the text it speaks (``input_format``),
- picks the voice and language (:mod:`voxserve.routing`: a named voice, ``auto``, or the text's script),
- resolves the voice: its id as listed whatever its case, or a blend of Kokoro voices,
- refuses a language the voice cannot speak (a Piper voice speaks its own language only),
- checks the format, the speed (:func:`voxserve.limits.check_speed`), the sample rate and the input length.

The numeric bounds live in :mod:`voxserve.limits`, below every layer, so that an engine, a session or the
text frontend refusing a value on its own says exactly what the policy says. This module sits below the
runtime: the server, the CLI and the runtime's own safety checks import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import get_args

from voxserve.audio import encoded_rate, supported_formats
from voxserve.engines.voices import blend_lead, parse_blend
from voxserve.errors import InputTooLarge, InvalidInput, UnknownVoice, UnsupportedLanguage
from voxserve.limits import check_input_length, check_sample_rate, check_speed, check_voice_spec
from voxserve.routing import AUTO_VOICE, Router
from voxserve.settings import Settings
from voxserve.text.clean import check_numbers
from voxserve.text.languages import Alphabet, normalize_lang
from voxserve.text.lexicon import for_voice
from voxserve.text.markup import check_markup
from voxserve.text.scripts import language_name
from voxserve.text.ssml import looks_like_ssml, ssml_to_text
from voxserve.types import LexiconEntry, VoiceInfo

# A JSON string may spend up to 6 bytes per character (\uXXXX escapes); the other fields of a body fit in this.
_BODY_OVERHEAD = 16 * 1024


@dataclass(frozen=True)
class SpeechRequest:
    """One utterance's options, as every transport and the CLI express them."""

    voice: str | None = None
    text: str = ""
    lang: str | None = None
    speed: float = 1.0
    format: str = "pcm"
    sample_rate: int | None = None
    word_timings: bool = False
    whole_file: bool = False  # a compressed format sent as one complete file at the end (see whole_file())
    lexicon: tuple[LexiconEntry, ...] = ()  # the caller's pronunciation entries (text/lexicon.py)
    input_format: str | None = None  # "text" or "ssml"; None: SSML when the text starts with <speak>
    phonemes: bool = False  # the text is phonemes in the voice's alphabet (the CLI's --phonemes)


def whole_file(fmt: str) -> bool:
    """Whether a one-shot answer in ``fmt`` (an HTTP response, a unary gRPC reply, a file the CLI writes)
    comes as one complete file made before it is sent. FLAC does: a streamed FLAC header cannot hold
    the length, and libsndfile (soundfile) refuses such files. The text is all there, so it is made
    faster than real time anyway."""
    return fmt.strip().lower() == "flac"


def engines_for(spec: str) -> list[str]:
    """The built-in engines to load to speak the voice or blend ``spec`` (``voxserve say`` loads only
    those), told from the ids alone: Piper ids name a locale and a quality (``en_US-joe-medium``), Kokoro
    ids never hold a hyphen. Anything else (``auto``, an unknown id) loads Kokoro, whose voices the policy
    then routes or refuses."""
    try:
        names = [name for name, _ in parse_blend(spec)]
    except ValueError:
        names = [blend_lead(spec)]  # the policy refuses the blend once the engine is loaded
    return sorted({"piper" if "-" in name else "kokoro" for name in names})


def check_language(engine: str, voice: str, voice_lang: str, lang: str) -> None:
    """A Piper voice speaks its own language only: its phonemes and training data are that language's."""
    if engine == "piper" and lang.split("-")[0] != voice_lang.split("-")[0]:
        raise UnsupportedLanguage(
            f"voice {voice!r} speaks {language_name(voice_lang)} only; pick a voice that speaks {lang!r}"
        )


class VoiceBook:
    """The voices a process serves, by id: what a voice name or blend in a request means."""

    def __init__(self, voices: Sequence[VoiceInfo]) -> None:
        self.voices = list(voices)
        self._by_id = {voice.id: voice for voice in self.voices}
        self._folded = {voice.id.lower(): voice for voice in self.voices}  # "AF_HEART" finds af_heart

    def engines(self) -> list[str]:
        return sorted({voice.engine for voice in self.voices})

    def _find(self, voice_id: str) -> VoiceInfo | None:
        return self._by_id.get(voice_id) or self._folded.get(voice_id.lower())

    def resolve(self, spec: str) -> VoiceInfo:
        """The voice ``spec`` names: a listed voice, or a blend of Kokoro voices (``af_heart:0.7+af_bella:0.3``)."""
        check_voice_spec(spec)
        known = self._find(spec)
        if known is not None:
            return known
        if "+" not in spec and ":" not in spec:
            raise UnknownVoice(f"unknown voice {spec!r}; GET /v1/voices or 'voxserve voices' lists the available ones")
        try:
            parts = parse_blend(spec)
        except ValueError as exc:
            raise UnknownVoice(f"bad voice blend {spec!r}: {exc}") from None
        members = []
        for name, _ in parts:
            member = self._find(name)
            if member is None:
                raise UnknownVoice(f"unknown voice {name!r} in blend {spec!r}; GET /v1/voices lists them")
            members.append(member)
        if any(member.engine != "kokoro" for member in members):
            raise InvalidInput(f"only Kokoro voices can be blended; {spec!r} mixes in another engine's voice")
        first = members[0]
        canonical = "+".join(f"{member.id}:{weight:g}" for member, (_, weight) in zip(members, parts, strict=True))
        return VoiceInfo(canonical, first.engine, first.lang, first.gender, first.sample_rate, "blend", first.alphabet)


def _read_ssml(request: SpeechRequest, max_chars: int) -> SpeechRequest:
    kind = (request.input_format or "").lower()
    if kind not in ("", "text", "ssml"):
        raise InvalidInput(f"input_format must be 'text' or 'ssml', got {request.input_format!r}")
    if request.phonemes or (kind != "ssml" and (kind == "text" or not looks_like_ssml(request.text))):
        return request
    document = ssml_to_text(request.text)
    if len(document.text) > max_chars:  # its entities expand: say so, not the length the caller never sent
        raise InputTooLarge(
            f"the SSML document reads as {len(document.text)} characters once its entities are expanded; "
            f"the limit is {max_chars}"
        )
    speed = request.speed * document.speed if document.speed is not None else request.speed
    return replace(request, text=document.text, speed=speed, input_format="text")


class RequestPolicy:
    """Resolves and checks requests against the operator's settings and the voices being served."""

    def __init__(self, settings: Settings, voices: Sequence[VoiceInfo]) -> None:
        self.settings = settings
        self.book = VoiceBook(voices)
        self._router = Router(self.book.voices, settings.default_voice, settings.language_voices)

    def voice(self, spec: str) -> VoiceInfo:
        return self.book.resolve(spec)

    def resolve(self, request: SpeechRequest, *, needs_text: bool) -> SpeechRequest:
        """Fill defaults and check every option; raise :class:`InvalidInput` (or a subclass) saying what
        to fix. SSML input becomes the text it reads; the voice becomes its id as listed."""
        request = _read_ssml(request, self.settings.max_input_chars)
        named = None if request.voice is None or request.voice.strip().lower() == AUTO_VOICE else request.voice
        if named is not None:
            named = self.voice(named.strip()).id  # an unknown voice is an UnknownVoice, whatever the text
        if request.phonemes:  # phonemes have no script to route by: the named (or default) voice speaks them
            voice, lang = named or self.settings.default_voice, request.lang
        else:
            route = self._router.route(request.text, named, request.lang)
            voice = route.voice
            routed = request.lang is not None or route.rerouted or named is None  # else the voice's own
            lang = route.lang if routed else request.lang
        info = self.voice(voice)
        if lang is not None:
            check_language(info.engine, voice, info.lang, normalize_lang(lang))
        fmt = request.format.lower()
        if fmt not in supported_formats():
            raise InvalidInput(f"unsupported format {request.format!r}; use one of {', '.join(supported_formats())}")
        check_speed(request.speed)
        check_sample_rate(request.sample_rate)
        if needs_text and not request.text.strip():
            raise InvalidInput("input text is empty")
        check_input_length(len(request.text), self.settings.max_input_chars)
        alphabet = _alphabet(info)
        if alphabet is not None:
            for_voice(request.lexicon, alphabet, strict=True)  # refused at the config, not at each utterance
        if needs_text and not request.phonemes:
            # the whole text is here: what the front end would refuse in a later sentence is refused now,
            # before an HTTP answer has begun (else a 200 would be cut off mid-stream)
            check_numbers(request.text)
            if alphabet is not None:
                check_markup(request.text, alphabet)
        return replace(request, voice=info.id, lang=lang, format=fmt)

    def check_text(self, text: str, request: SpeechRequest) -> None:
        """Refuse text streamed into a resolved request that its voice cannot read, naming a voice that
        can (the text front end would refuse it later, and could not say which voice)."""
        assert request.voice is not None
        if not request.phonemes:
            self._router.check(text, request.voice, request.lang)

    def output_rate(self, request: SpeechRequest) -> int:
        """The sample rate a resolved request's audio is sent at."""
        assert request.voice is not None
        return encoded_rate(request.format, request.sample_rate or self.voice(request.voice).sample_rate)


def _alphabet(info: VoiceInfo) -> Alphabet | None:
    """The phoneme alphabet of ``info``'s engine (None: one the text layer does not know)."""
    return next((a for a in get_args(Alphabet) if a == info.alphabet), None)


def body_limit_bytes(settings: Settings) -> int:
    """The largest HTTP request body worth reading: the longest input as JSON escapes, plus the other fields."""
    return settings.max_input_chars * 6 + _BODY_OVERHEAD
