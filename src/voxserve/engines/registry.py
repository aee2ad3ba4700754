"""The engine families the runtime can load, in one table.

:class:`voxserve.runtime.Runtime` loads each family ``Settings.engines`` names through :data:`ENGINES`:
a loader gets the model store, the ONNX session factory and the tuning (:class:`EngineLoad`) and
returns the engine with whatever must be released when the runtime closes (:class:`LoadedEngine`).
The runtime knows nothing else of a family: adding a model is a loader here, its files' manifest entry
(``models/manifest.py``) and its name in ``Settings``' ``EngineName``. The Piper voices found under
``MODEL_PATH`` (:mod:`voxserve.piper_voices`) are built by the same :func:`piper_engine` as the
bundled Piper voice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from voxserve.engines.base import Engine
from voxserve.engines.batching import BatchPolicy
from voxserve.engines.kokoro import KokoroEngine
from voxserve.engines.kokoro_stream import HOP as KOKORO_HOP
from voxserve.engines.kokoro_stream import SAMPLE_RATE as KOKORO_RATE
from voxserve.engines.kokoro_stream import KokoroStreamer
from voxserve.engines.onnx import OnnxSession, SessionFactory
from voxserve.engines.piper import PiperConfig, PiperEngine
from voxserve.engines.piper_stream import HOP as PIPER_HOP
from voxserve.engines.piper_stream import PiperStreamer
from voxserve.engines.windowing import WindowConfig
from voxserve.models import ModelStore
from voxserve.models.split_cache import ensure_split_graphs, precision_record, resolve_precision
from voxserve.tuning import Tuning

PIPER_VOICE = "en_US-joe-medium"  # the Piper voice the model store fetches


@dataclass(frozen=True)
class EngineLoad:
    """What a family's loader gets from the runtime: where the models are, how to open them, and the
    decode policy every engine shares."""

    store: ModelStore
    sessions: SessionFactory
    tuning: Tuning
    windows: WindowConfig
    batch: BatchPolicy = field(default_factory=BatchPolicy)
    precision: str = "auto"  # Settings.precision: the split decoder's weights (auto: by device)

    @property
    def windowed(self) -> bool:
        """Split graphs decoded in windows (else one whole-model call per sentence)."""
        return self.tuning.decode_mode == "windowed"


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class LoadedEngine:
    """A loaded engine and what releases its resources (threads, sessions) when the runtime closes."""

    engine: Engine
    close: Callable[[], None] = _nothing


EngineLoader = Callable[[EngineLoad], LoadedEngine]


def load_kokoro(load: EngineLoad) -> LoadedEngine:
    """Kokoro-82M: the split graphs decoded in windows, the whole model loaded only when used."""
    model = load.store.kokoro_model()
    voices = load.store.kokoro_voices_dir()
    if not load.windowed:
        return LoadedEngine(KokoroEngine(load.sessions.create(model, elastic=False), voices, None, load.windows))
    precision = resolve_precision(
        load.precision, load.sessions.on_gpu, load.sessions.intra_op_threads, precision_record(load.store)
    )
    graphs = ensure_split_graphs(load.store, "kokoro", precision)
    context = load.windows.frames(load.windows.context_s, KOKORO_HOP / KOKORO_RATE)
    streamer = KokoroStreamer(load.sessions, graphs, context_frames=context, batch=load.batch)
    engine = KokoroEngine(load.sessions.lazy(model), voices, streamer, load.windows)
    return LoadedEngine(engine, close=streamer.close)


def load_piper(load: EngineLoad) -> LoadedEngine:
    """The fetched Piper voice (:data:`PIPER_VOICE`)."""
    config = PiperConfig.load(load.store.piper_config(), PIPER_VOICE)
    graphs = ensure_split_graphs(load.store, "piper") if load.windowed else None
    model = load.store.piper_model()
    whole = load.sessions.lazy(model) if load.windowed else load.sessions.create(model, elastic=False)
    return LoadedEngine(piper_engine(load, whole, config, graphs=graphs))


def piper_engine(
    load: EngineLoad, whole: OnnxSession, config: PiperConfig, lang: str = "en-us", *, graphs: Path | None
) -> PiperEngine:
    """A Piper voice's engine: windowed over its split graphs when it has them, else whole sentences."""
    streamer = None
    if graphs is not None:
        context = load.windows.frames(load.windows.context_s, PIPER_HOP / config.sample_rate)
        streamer = PiperStreamer(load.sessions, graphs, config.sample_rate, context_frames=context)
    return PiperEngine(whole, config, lang, streamer=streamer, windows=load.windows)


ENGINES: Mapping[str, EngineLoader] = {"kokoro": load_kokoro, "piper": load_piper}
