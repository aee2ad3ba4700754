"""Piper voices found on disk: listed at start, loaded on first use, unloaded beyond a memory budget.

Each ``.onnx`` + ``.onnx.json`` pair (:mod:`voxserve.models.piper_catalog`) becomes one voice, or one
per speaker of a multi-speaker model. Its language and espeak voice come from its config (the
language is registered with the text frontend), its phoneme ids from the config's
``phoneme_id_map``. Nothing is loaded until a request uses the voice; then its ONNX session is
built and kept while the loaded voices' memory stays within ``piper_memory_mb``, the least recently
used ones being dropped first (a stream in flight keeps its model until it ends).

Windowed streaming needs the graph cut in two where joe's is (the latent that enters the HiFi-GAN
decoder). A voice whose graph has that structure gets split graphs in the cache; one that does not
(another architecture, or a speaker input the cut would lose) is spoken one sentence per model call,
and a log line says why.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path

import onnx
import psutil

from voxserve.engines.onnx import RunControl
from voxserve.engines.piper import PiperConfig, PiperEngine, piper_voice_infos
from voxserve.engines.registry import EngineLoad, piper_engine
from voxserve.engines.windowing import WindowCost
from voxserve.errors import ModelError
from voxserve.models.fileio import sha256_file
from voxserve.models.graphs import build_split_graphs
from voxserve.models.piper_catalog import PiperVoiceFiles, discover, search_roots
from voxserve.settings import Settings
from voxserve.text.languages import register_language
from voxserve.types import EngineAudio, VoiceInfo

log = logging.getLogger(__name__)

SPLIT_DIR = "piper-split"


class LazyPiperEngine:
    """The :class:`~voxserve.engines.base.Engine` of one Piper model file, loaded when first spoken."""

    name = "piper"
    alphabet = PiperEngine.alphabet
    max_phonemes = PiperEngine.max_phonemes

    def __init__(self, files: PiperVoiceFiles, config: PiperConfig, lang: str, library: PiperLibrary) -> None:
        self.files = files
        self.config = config
        self.lang = lang
        self.sample_rate = config.sample_rate
        self._library = library

    @property
    def window_cost(self) -> WindowCost | None:
        loaded = self._library.loaded(self.files.voice_id)
        return loaded.window_cost if loaded is not None else None

    @property
    def windowed(self) -> bool:
        loaded = self._library.loaded(self.files.voice_id)
        return loaded is not None and loaded.windowed

    def voices(self) -> list[VoiceInfo]:
        return piper_voice_infos(self.config, self.lang)

    def check_voice(self, voice: str) -> None:
        self.config.speaker_id(voice)

    def unknown_symbols(self, phonemes: str) -> set[str]:
        return {ch for ch in phonemes if ch not in self.config.phoneme_id_map}

    def synthesize(self, phonemes: str, voice: str, speed: float = 1.0) -> EngineAudio:
        self.check_voice(voice)
        return self._library.acquire(self).synthesize(phonemes, voice, speed)

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
        self.check_voice(voice)
        engine = self._library.acquire(self)
        yield from engine.stream(
            phonemes, voice, speed, first_window_s=first_window_s, next_window_s=next_window_s, control=control
        )


class PiperLibrary:
    """The Piper voices under the search roots, with an LRU of loaded models within a memory budget."""

    def __init__(
        self,
        voices: list[PiperVoiceFiles],
        load: EngineLoad,
        *,
        split_root: Path,
        budget_bytes: int,
    ) -> None:
        self._load_with = load
        self._split_root = split_root
        self.budget_bytes = budget_bytes
        self._lock = threading.Lock()
        self._loaded: OrderedDict[str, tuple[PiperEngine, int]] = OrderedDict()
        self.engines: dict[str, LazyPiperEngine] = {}
        for files in voices:
            try:
                config = PiperConfig.load(files.config, files.voice_id)
                lang = register_language(config.language, config.espeak_voice)
            except ModelError as exc:
                log.warning("skipping Piper voice %s: %s", files.voice_id, exc)
                continue
            engine = LazyPiperEngine(files, config, lang, self)
            for voice in engine.voices():
                self.engines[voice.id] = engine

    @classmethod
    def from_settings(cls, settings: Settings, load: EngineLoad) -> PiperLibrary:
        return cls(
            discover(*search_roots(settings)),
            load,
            split_root=settings.cache_dir / SPLIT_DIR,
            budget_bytes=settings.piper_memory_mb << 20,
        )

    def voices(self, exclude: set[str] | frozenset[str] = frozenset()) -> list[VoiceInfo]:
        seen: set[int] = set()
        infos: list[VoiceInfo] = []
        for engine in self.engines.values():
            if id(engine) not in seen:
                seen.add(id(engine))
                infos.extend(v for v in engine.voices() if v.id not in exclude)
        return infos

    # --- loading ------------------------------------------------------------------------
    def loaded(self, voice_id: str) -> PiperEngine | None:
        entry = self._loaded.get(voice_id)
        return entry[0] if entry is not None else None

    @property
    def loaded_ids(self) -> list[str]:
        """Loaded models, least recently used first."""
        return list(self._loaded)

    @property
    def loaded_bytes(self) -> int:
        return sum(cost for _, cost in self._loaded.values())

    def acquire(self, lazy: LazyPiperEngine) -> PiperEngine:
        """The loaded engine of ``lazy``'s model, loading it (and unloading others) as needed."""
        key = lazy.files.voice_id
        with self._lock:
            entry = self._loaded.get(key)
            if entry is not None:
                self._loaded.move_to_end(key)
                return entry[0]
            before = _rss()
            t0 = time.perf_counter()
            engine = self._load(lazy)
            cost = max(_rss() - before, lazy.files.model.stat().st_size)
            self._loaded[key] = (engine, cost)
            log.info("loaded Piper voice %s in %.2f s (~%d MB)", key, time.perf_counter() - t0, cost >> 20)
            while self.loaded_bytes > self.budget_bytes and len(self._loaded) > 1:
                dropped, (_, freed) = self._loaded.popitem(last=False)
                log.info(
                    "unloaded Piper voice %s (~%d MB) to stay within %d MB",
                    dropped,
                    freed >> 20,
                    self.budget_bytes >> 20,
                )
            return engine

    def _load(self, lazy: LazyPiperEngine) -> PiperEngine:
        load = self._load_with
        graphs = self._split_graphs(lazy.files) if load.windowed else None
        model = lazy.files.model
        # windowed, the whole graph serves only direct engine calls: loaded when one comes, if ever
        whole = load.sessions.lazy(model) if graphs is not None else load.sessions.create(model, elastic=False)
        return piper_engine(load, whole, lazy.config, lazy.lang, graphs=graphs)

    def _split_graphs(self, files: PiperVoiceFiles) -> Path | None:
        """The voice's split graphs (built once per model file), or None when its graph has no such cut."""
        why = _unsplittable(files.model)
        if why is not None:
            log.warning("Piper voice %s: %s; it is spoken one sentence per model call", files.voice_id, why)
            return None
        directory = self._split_root / sha256_file(files.model)[:16]  # by content: a copy shares them
        if not (directory / "piper_split.json").is_file():
            try:
                build_split_graphs(files.model, directory, verify_hashes=False)
            except (ModelError, ValueError, KeyError) as exc:
                log.warning("Piper voice %s: cannot split its graph (%s); sentence mode", files.voice_id, exc)
                return None
        return directory


def _unsplittable(model: Path) -> str | None:
    """Why ``model``'s graph cannot be cut where joe's is, or None when it can."""
    graph = onnx.load(str(model), load_external_data=False).graph
    inputs = {i.name for i in graph.input}
    if not {"input", "input_lengths", "scales"} <= inputs:
        return f"its inputs {sorted(inputs)} are not a Piper VITS graph's"
    if "sid" in inputs:
        return "its graph takes a speaker id, which the split front and decoder do not carry"
    if not any("/Mul_7_output_0" in node.output for node in graph.node):
        return "its graph lacks the latent tensor /Mul_7_output_0 that feeds the HiFi-GAN decoder"
    return None


def _rss() -> int:
    with contextlib.suppress(psutil.Error):
        return int(psutil.Process().memory_info().rss)
    return 0
