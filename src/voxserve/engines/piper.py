"""Piper (VITS) voices through ONNX Runtime, with our own phoneme-id mapping."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voxserve.engines.base import Alphabet
from voxserve.engines.onnx import OnnxSession, RunControl
from voxserve.engines.piper_stream import HOP as PIPER_HOP
from voxserve.engines.piper_stream import PiperFront, PiperStreamer
from voxserve.engines.windowing import WindowConfig, WindowCost, run_graph
from voxserve.errors import InvalidInput, ModelError, UnknownVoice
from voxserve.limits import check_speed
from voxserve.types import EngineAudio, FloatAudio, VoiceInfo

PAD, BOS, EOS = "_", "^", "$"
PIPER_ALPHABET: Alphabet = "espeak"  # Piper's phonemes (its voices' VoiceInfo and the engine say it)
SPEAKER_SEP = "@"  # en_US-libritts_r-medium@p225: one speaker of a multi-speaker voice


@dataclass(frozen=True)
class PiperConfig:
    """What we need from a Piper voice's ``.onnx.json``."""

    voice_id: str
    sample_rate: int
    espeak_voice: str
    noise_scale: float
    length_scale: float
    noise_w: float
    num_speakers: int
    phoneme_id_map: dict[str, list[int]]
    language: str = "en_US"  # the config's language code ("ko_KR"), else the espeak voice
    speakers: tuple[tuple[str, int], ...] = ()  # speaker name → id of a multi-speaker voice, in id order
    name: str = ""

    @classmethod
    def load(cls, path: Path, voice_id: str) -> PiperConfig:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            inference = raw.get("inference", {})
            espeak = str(raw.get("espeak", {}).get("voice", "en-us"))
            speaker_map = {str(k): int(v) for k, v in (raw.get("speaker_id_map") or {}).items()}
            return cls(
                voice_id=voice_id,
                sample_rate=int(raw["audio"]["sample_rate"]),
                espeak_voice=espeak,
                noise_scale=float(inference.get("noise_scale", 0.667)),
                length_scale=float(inference.get("length_scale", 1.0)),
                noise_w=float(inference.get("noise_w", 0.8)),
                num_speakers=int(raw.get("num_speakers", 1)),
                phoneme_id_map={k: list(v) for k, v in raw["phoneme_id_map"].items()},
                language=str((raw.get("language") or {}).get("code") or espeak),
                speakers=tuple(sorted(speaker_map.items(), key=lambda item: item[1])),
                name=str(raw.get("dataset") or ""),
            )
        except (OSError, KeyError, ValueError, TypeError, AttributeError) as exc:
            raise ModelError(f"Piper config {path} is unreadable ({exc}); run 'voxserve models fetch --force'") from exc

    def voice_ids(self) -> list[str]:
        """One voice per speaker of a multi-speaker model (``<voice>@<speaker>``), else the voice."""
        if len(self.speakers) > 1:
            return [f"{self.voice_id}{SPEAKER_SEP}{name}" for name, _ in self.speakers]
        return [self.voice_id]

    def speaker_id(self, voice: str) -> int:
        """The speaker id ``voice`` names; raises :class:`UnknownVoice` for a voice of another model."""
        base, _, speaker = voice.partition(SPEAKER_SEP)
        if base != self.voice_id:
            raise UnknownVoice(f"unknown Piper voice {voice!r}; this model is {self.voice_id!r}")
        if not speaker:
            return self.speakers[0][1] if self.speakers else 0
        ids = dict(self.speakers)
        if speaker not in ids:
            raise UnknownVoice(f"Piper voice {self.voice_id!r} has no speaker {speaker!r}; it has {', '.join(ids)}")
        return ids[speaker]


_GENDERS = {"en_US-joe-medium": "male"}  # Piper configs do not say; the voices we ship are known


def piper_voice_infos(config: PiperConfig, lang: str) -> list[VoiceInfo]:
    """The voices a Piper model offers: one, or one per speaker."""
    parts = config.voice_id.split("-")
    title = (config.name or (parts[1] if len(parts) > 1 else config.voice_id)).replace("_", " ").title()
    infos = []
    for voice_id in config.voice_ids():
        speaker = voice_id.partition(SPEAKER_SEP)[2]
        infos.append(
            VoiceInfo(
                id=voice_id,
                engine="piper",
                lang=lang,
                gender=_GENDERS.get(config.voice_id, "unknown"),
                sample_rate=config.sample_rate,
                name=f"{title} (Piper)" + (f", speaker {speaker}" if speaker else ""),
                alphabet=PIPER_ALPHABET,
            )
        )
    return infos


class PiperEngine:
    name = "piper"
    alphabet: Alphabet = PIPER_ALPHABET
    max_phonemes = 2000

    def __init__(
        self,
        session: OnnxSession,
        config: PiperConfig,
        lang: str = "en-us",
        streamer: PiperStreamer | None = None,
        windows: WindowConfig | None = None,
    ) -> None:
        self._session = session
        self.config = config
        self.sample_rate = config.sample_rate
        self._lang = lang
        self._streamer = streamer
        self._windows = windows or WindowConfig()

    @property
    def window_cost(self) -> WindowCost | None:
        return self._streamer.cost if self._streamer is not None else None

    @property
    def windowed(self) -> bool:
        return self._streamer is not None

    @property
    def session(self) -> OnnxSession:
        return self._session

    def voices(self) -> list[VoiceInfo]:
        return piper_voice_infos(self.config, self._lang)

    def check_voice(self, voice: str) -> None:
        self.config.speaker_id(voice)

    def unknown_symbols(self, phonemes: str) -> set[str]:
        return {ch for ch in phonemes if ch not in self.config.phoneme_id_map}

    def phoneme_ids(self, phonemes: str) -> list[int]:
        """BOS, then each phoneme followed by a pad, then EOS (the layout Piper voices are trained on)."""
        id_map = self.config.phoneme_id_map
        unknown = self.unknown_symbols(phonemes)
        if unknown:
            raise InvalidInput(f"phonemes not in the Piper voice's alphabet: {' '.join(sorted(unknown))}")
        ids = [*id_map[BOS], *id_map[PAD]]
        for ch in phonemes:
            ids.extend(id_map[ch])
            ids.extend(id_map[PAD])
        ids.extend(id_map[EOS])
        return ids

    def scales(self, speed: float) -> npt.NDArray[np.float32]:
        check_speed(speed)
        cfg = self.config
        return np.array([cfg.noise_scale, cfg.length_scale / speed, cfg.noise_w], dtype=np.float32)

    def synthesize(
        self, phonemes: str, voice: str, speed: float = 1.0, control: RunControl | None = None
    ) -> EngineAudio:
        """The whole phoneme string in one call of the unsplit graph; ``control`` can stop it."""
        self.check_voice(voice)
        scales = self.scales(speed)
        ids = self.phoneme_ids(phonemes.strip())
        if len(ids) <= 3:
            raise InvalidInput("nothing to synthesize: the phoneme string is empty")
        feed: dict[str, npt.NDArray[np.generic]] = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": scales,
        }
        if "sid" in {i.name for i in self._session.get_inputs()}:
            feed["sid"] = np.array([self.config.speaker_id(voice)], dtype=np.int64)
        (audio,) = run_graph(self._session, None, feed, f"Piper on {len(ids)} phoneme ids", control)
        return EngineAudio(samples=np.asarray(audio, dtype=np.float32).reshape(-1), sample_rate=self.sample_rate)

    def stream(
        self,
        phonemes: str,
        voice: str,
        speed: float = 1.0,
        *,
        first_window_s: float | None = None,
        next_window_s: Callable[[], float | None] | None = None,
        control: RunControl | None = None,
    ) -> Iterator[EngineAudio]:
        if self._streamer is None:  # sentence mode, or a voice whose graph could not be split
            yield self.synthesize(phonemes, voice, speed, control)
            return
        front = self.front(phonemes, voice, speed, control)
        yield from self.decode_front(front, first_window_s, next_window_s, control)

    def front(self, phonemes: str, voice: str, speed: float = 1.0, control: RunControl | None = None) -> PiperFront:
        """The latent and durations of ``phonemes`` (the split graph's front, with its random draws): what
        :meth:`decode_front` decodes. Windowed engines only."""
        assert self._streamer is not None, "the Piper front needs the split graphs (decode_mode=windowed)"
        self.check_voice(voice)
        noise_scale, length_scale, noise_w = (float(x) for x in self.scales(speed))
        ids = self.phoneme_ids(phonemes.strip())
        if len(ids) <= 3:
            raise InvalidInput("nothing to synthesize: the phoneme string is empty")
        return self._streamer.front(
            np.array(ids, dtype=np.int64),
            length_scale=length_scale,
            noise_scale=noise_scale,
            noise_w=noise_w,
            control=control,
        )

    def decode_front(
        self,
        front: PiperFront,
        first_window_s: float | None = None,
        next_window_s: Callable[[], float | None] | None = None,
        control: RunControl | None = None,
    ) -> Iterator[EngineAudio]:
        """``front`` decoded in the server's windows (:meth:`stream` after the front); ``decode_whole``
        decodes the same front in one call, which the evaluation compares them with."""
        assert self._streamer is not None
        w = self._windows
        frame_s = PIPER_HOP / self.sample_rate
        first, following, largest = w.plan(first_window_s, frame_s)
        yield from self._streamer.decode_windows(
            front,
            first,
            following,
            growth=w.growth,
            max_window_frames=largest,
            next_window_frames=w.sizer(next_window_s, frame_s),
            control=control,
        )

    def decode_whole(self, front: PiperFront) -> FloatAudio:
        """``front`` decoded in one call of the split decoder."""
        assert self._streamer is not None
        return self._streamer.decode(front)
