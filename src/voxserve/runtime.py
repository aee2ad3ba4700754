"""The process-wide synthesis runtime: models, engines, text frontend and worker pool.

Built once from :class:`~voxserve.settings.Settings` by whoever owns the process (the
CLI or the server) and passed down. Construction is cheap; :meth:`Runtime.load` does
the heavy work (loading models, warming up) and may run in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from voxserve.engines.base import Engine
from voxserve.engines.batching import BatchPolicy
from voxserve.engines.cpus import one_thread_per_library_call, usable_cores
from voxserve.engines.heap import HeapTrimmer, cap_heaps
from voxserve.engines.kokoro import KokoroEngine
from voxserve.engines.onnx import SessionFactory, thread_budget
from voxserve.engines.registry import ENGINES, EngineLoad, EngineLoader
from voxserve.engines.voices import blend_lead
from voxserve.engines.windowing import WindowConfig, WindowCost
from voxserve.errors import NotReady, UnknownVoice, UnsupportedLanguage
from voxserve.models import ModelStore
from voxserve.piper_voices import PiperLibrary
from voxserve.policy import check_language
from voxserve.settings import Settings
from voxserve.stream.capacity import Pricing
from voxserve.stream.pool import WorkerPool
from voxserve.stream.session import SynthesisSession
from voxserve.stream.session_config import SessionConfig
from voxserve.text.frontend import Frontend
from voxserve.text.languages import lang_for_voice, normalize_lang
from voxserve.text.lexicon import for_voice, load_lexicon
from voxserve.text.teaching import TEACHING_SENTENCES
from voxserve.tuning import Tuning
from voxserve.types import SchedulerStats, SynthesisParams, VoiceInfo

log = logging.getLogger(__name__)

# long enough for windows of several sizes: they teach the engine what a window costs here
_WARM_TEXT = "Hello there, how are you today? I hope the weather is nice where you are."


def batch_policy(settings: Settings, tuning: Tuning) -> BatchPolicy:
    """Cross-stream batching of decoder windows: only where the operator asks for it (``decode_batch``).
    Batched calls made no more audio per second than single ones on a CPU nor, in two runs, on an H200
    (docs/gpu.md), and batching fixes the windows' sizes, so by default each window has its own call."""
    return BatchPolicy(max_batch=max(1, settings.decode_batch), max_wait_s=tuning.decode_batch_wait_ms / 1000)


class Runtime:
    """``families`` are the engine families to load by name (default: those ``Settings.engines`` names,
    from :data:`voxserve.engines.registry.ENGINES`); a test passes an engine that needs no model files."""

    def __init__(
        self, settings: Settings, tuning: Tuning | None = None, families: Mapping[str, EngineLoader] | None = None
    ) -> None:
        self.settings = settings
        self.tuning = tuning or Tuning()
        self._families = families
        self.store = ModelStore(settings)
        self.frontend = Frontend(settings)
        self.lexicon = load_lexicon(settings.lexicon) if settings.lexicon is not None else {}
        self._engines: dict[str, Engine] = {}
        self._voice_engine: dict[str, Engine] = {}
        self._pool: WorkerPool | None = None
        self._pricing: Pricing | None = None  # what a stream costs here, once loaded (CPU only)
        self._batch = BatchPolicy()
        self._thread_levels: tuple[int | None, ...] = (None,)
        self._closers: list[Callable[[], None]] = []
        self._heap = HeapTrimmer()
        self._lock = threading.Lock()
        self.load_seconds: dict[str, float] = {}
        self.piper_library: PiperLibrary | None = None  # Piper voices found under MODEL_PATH
        self.ready = False

    # --- lifecycle ----------------------------------------------------------------------
    def load(self, warm: bool = True) -> None:
        """Load the configured engines and warm them and the default voice's language up."""
        with self._lock:
            if self.ready:
                return
            cores = usable_cores()
            one_thread_per_library_call()  # the pool counts the cores its jobs hold: no library adds threads
            factory = SessionFactory(
                self.settings.providers,
                self.settings.resolved_intra_op_threads(cores),
                spinning=self.tuning.onnx_spinning,
                elastic=self._elastic(),
                read_sealed=self.store.read_sealed,
            )
            if not factory.on_gpu:
                cap_heaps(cores)  # before the sessions start their threads
            self._batch = batch_policy(self.settings, self.tuning)
            windows, precision = self.window_config(), self.settings.precision
            load = EngineLoad(self.store, factory, self.tuning, windows, self._batch, precision)
            for name, loader in self._loaders().items():
                t0 = time.perf_counter()
                loaded = loader(load)
                self.load_seconds[name] = time.perf_counter() - t0
                self._engines[name] = engine = loaded.engine
                self._closers.append(loaded.close)
                for voice in engine.voices():
                    self._voice_engine[voice.id] = engine
                log.info("loaded engine %s in %.2f s", name, self.load_seconds[name])
            self.piper_library = PiperLibrary.from_settings(self.settings, load)
            for voice in self.piper_library.voices(exclude=set(self._voice_engine)):
                self._voice_engine[voice.id] = self.piper_library.engines[voice.id]
            self._pool = self._build_pool(factory, cores)
            self._thread_levels = factory.levels if factory.elastic else (None,)
            if warm:
                self._warm_workers()
                self.warm_up()
                self.frontend.warm(self._warm_languages())
            self.learn_voices(learn=warm)  # without warm-up, only what an earlier start saved
            one_thread_per_library_call()  # again for the libraries the engines and text fronts loaded
            if not factory.on_gpu:  # the meter from here on: the warm-up's odd windows are no stream's cost
                self._pricing = self._price(factory.intra_op_threads)
                self._heap.start()
            self.ready = True

    def _warm_languages(self) -> list[str]:
        wanted = [lang.strip().lower() for lang in self.settings.warm_languages if lang.strip()]
        if wanted in ([], ["none"]):
            return []
        if wanted != ["all"]:
            return wanted
        langs = set()
        for voice_id in self._voice_engine:
            with contextlib.suppress(UnsupportedLanguage):
                langs.add(lang_for_voice(voice_id))
        return sorted(langs)

    def _elastic(self) -> bool:
        """Share the cores between concurrent streams (windowed CPU decoding without batching)."""
        t = self.tuning
        return t.elastic_threads and t.decode_mode == "windowed" and self.settings.decode_batch <= 1

    def _build_pool(self, factory: SessionFactory, cores: int) -> WorkerPool:
        if factory.elastic:  # each job at its share of the cores; a second worker per core runs the
            # late job while the jobs it stopped wait to be readmitted
            workers = self.tuning.worker_threads or 2 * factory.intra_op_threads
            return WorkerPool(workers, cores=factory.intra_op_threads, levels=factory.levels)
        workers = self.tuning.worker_threads or max(1, cores // factory.intra_op_threads)
        if self._batch.enabled and not self.tuning.worker_threads:
            workers = max(workers, self._batch.max_batch)  # enough callers in flight to fill a batch
        return WorkerPool(workers, job_threads=factory.intra_op_threads)

    def window_config(self) -> WindowConfig:
        s = self.tuning
        # batched decoding needs windows of equal size: fixed steps, sizes in multiples of 0.25 s
        batching = self._batch.enabled
        return WindowConfig(
            first_s=s.window_first_ms / 1000,
            next_s=s.window_next_ms / 1000,
            growth=1.0 if batching else s.window_growth,
            max_s=s.window_max_ms / 1000,
            max_pad_s=s.max_pad_ms / 1000,
            context_s=s.window_context_ms / 1000,
            quantum_s=0.25 if batching else 0.0,
            early_stats=s.window_early_stats,
            first_context_s=s.window_first_context_ms / 1000,
        )

    def _loaders(self) -> Mapping[str, EngineLoader]:
        if self._families is not None:
            return self._families
        return {name: ENGINES[name] for name in self.settings.engines}

    def _warm_voice(self, engine: Engine) -> str:
        """The voice the warm-up speaks with: the default one where ``engine`` has it, else its first."""
        default = self.settings.default_voice
        return default if default in {v.id for v in engine.voices()} else engine.voices()[0].id

    def warm_up(self) -> None:
        """Run the default voice so the first request doesn't pay for lazy initialisation, and the windows'
        costs are learned from calls that no longer do."""
        for engine in self._engines.values():
            voice = self._warm_voice(engine)
            lang = lang_for_voice(voice)
            segments = self.frontend.phonemize(_WARM_TEXT, lang, engine.alphabet, max_phonemes=engine.max_phonemes)
            phonemes = " ".join(segment.phonemes for segment in segments)
            # the path requests take: split graphs and windows when windowed, else the whole model, at
            # every thread count a job may get (elastic sessions): each has its own cost. Twice, learning
            # from the second pass: the first calls of each session at each size also allocate, and priced
            # a one-thread Kokoro window well above what later passes learn (docs/benchmarks.md, "What a
            # fresh server's warm-up teaches the window costs")
            for _ in range(2 if engine.window_cost is not None else 1):  # a whole model learns no windows
                if engine.window_cost is not None:
                    engine.window_cost.clear()  # the fit learns from the last pass only
                for threads in self._thread_levels:
                    with thread_budget(threads):
                        for _ in engine.stream(phonemes, voice, first_window_s=self.tuning.window_first_ms / 1000):
                            pass

    def _warm_workers(self) -> None:
        """Speak the warm-up text once per engine as a stream does: through a session, on the pool's
        workers (in a thread of its own: the loading thread may be an event loop's). A fresh server's first
        jobs on those workers run longer than the costs learned on the loading thread, and a lone
        listener's second window came late (docs/benchmarks.md, "The first listener of a fresh server").
        Their cold samples are no stream's: :meth:`warm_up` learns the costs afresh, the margin forgets them."""
        config = self.session_config(pace=False)

        async def speak() -> None:
            for engine in self._engines.values():
                voice = self._warm_voice(engine)
                session = self._session(engine, SynthesisParams(voice=voice), lang_for_voice(voice), config)
                session.push_text(_WARM_TEXT)
                session.close()
                async for _ in session:
                    pass

        with ThreadPoolExecutor(1, thread_name_prefix="voxserve-warm") as warming:
            warming.submit(asyncio.run, speak()).result()  # raises here what the warm-up raised
        self.pool.margin.clear()

    def learn_voices(self, learn: bool = True) -> None:
        """Teach windowed Kokoro every voice's decoder statistics and how to predict a sentence's (saved
        with the split graphs, so only the first start after a model build pays for it: three sentences
        per voice and all of them for the default voice; minutes of work)."""
        for engine in self._engines.values():
            if not isinstance(engine, KokoroEngine):
                continue

            def phonemize(text: str, engine: KokoroEngine = engine) -> str:
                segments = self.frontend.phonemize(text, "en-us", engine.alphabet)
                return " ".join(segment.phonemes for segment in segments)

            default = self.settings.default_voice
            thorough = default if default in {voice.id for voice in engine.voices()} else None
            t0 = time.perf_counter()
            learned = engine.learn_voice_statistics(TEACHING_SENTENCES, phonemize, thorough=thorough, learn=learn)
            if learned:
                log.info("learned decoder statistics from %d sentences in %.1f s", learned, time.perf_counter() - t0)

    def close(self) -> None:
        self._heap.stop()
        if self._pool is not None:
            self._pool.close(wait=False)
        for close in self._closers:
            close()
        self.ready = False

    # --- queries ------------------------------------------------------------------------
    @property
    def decoder_calls(self) -> tuple[int, int]:
        """(Kokoro decoder calls made, windows they decoded): equal unless windows were batched."""
        streamers = [e.streamer for e in self._engines.values() if isinstance(e, KokoroEngine) and e.streamer]
        runners = [streamer.decoder for streamer in streamers]
        return sum(r.batches for r in runners), sum(r.windows for r in runners)

    def _price(self, cores: int) -> Pricing:
        """What streams cost on ``cores`` shared cores, from the loaded engines' learned window costs."""
        pool, cfg = self.pool, self.session_config()

        def window_cost(name: str) -> WindowCost | None:
            found = self._engines.get(name)
            return found.window_cost if found is not None else None

        return Pricing(
            window_cost,
            self._thread_levels,
            cores,
            (cfg.first_window_s, cfg.max_window_s),
            held=lambda: pool.held_core_s,
            threads_now=lambda: pool.share(held=False)[0],
            sample_core_s=self.tuning.capacity_sample_core_s,
        )

    def stream_share(self, engine: str) -> float | None:
        """The fraction of this machine's cores one real-time stream of ``engine`` takes as admission
        books it (:meth:`voxserve.stream.capacity.Pricing.stream_share`); None while nothing is
        learned, or on a GPU."""
        return self._pricing.stream_share(engine) if self._pricing is not None else None

    @property
    def core_factor(self) -> float:
        """Core-seconds streams really hold per core-second their window costs book (1 until measured)."""
        return self._pricing.meter.factor if self._pricing is not None else 1.0

    def window_share(self, engine: str) -> float | None:
        """The fraction of the cores one real-time stream of ``engine`` keeps busy by the window costs
        learned here (:meth:`voxserve.stream.capacity.Pricing.window_share`)."""
        return self._pricing.window_share(engine) if self._pricing is not None else None

    def scheduler_stats(self) -> SchedulerStats:
        """The worker pool's state and the core factor (all zero while models load)."""
        if self._pool is None:
            return SchedulerStats(0, 0, 0)
        return replace(self._pool.stats(), core_factor=self.core_factor)

    @property
    def pool(self) -> WorkerPool:
        if self._pool is None:
            raise NotReady("models are still loading; retry shortly")
        return self._pool

    @property
    def engines(self) -> dict[str, Engine]:
        return dict(self._engines)

    def voices(self) -> list[VoiceInfo]:
        own = [voice for engine in self._engines.values() for voice in engine.voices()]
        found = self.piper_library.voices(exclude={v.id for v in own}) if self.piper_library else []
        return own + found

    def engine_for(self, voice: str) -> Engine:
        if not self.ready:
            raise NotReady("models are still loading; retry shortly")
        first = blend_lead(voice)
        engine = self._voice_engine.get(first)
        if engine is None:
            raise UnknownVoice(f"unknown voice {voice!r}; list voices with 'voxserve voices' or GET /v1/voices")
        engine.check_voice(voice)
        return engine

    def session_config(self, *, pace: bool = True) -> SessionConfig:
        s, t = self.settings, self.tuning
        return SessionConfig(
            chunk_ms=s.stream_buffer_ms,
            first_segment_words=s.first_segment_words,
            max_segment_chars=s.max_segment_chars,
            sentence_pause_ms=s.sentence_pause_ms,
            clause_pause_ms=s.clause_pause_ms,
            lookahead_s=s.lookahead_s,
            idle_flush_ms=s.idle_flush_ms,
            first_window_s=t.window_first_ms / 1000,
            max_window_s=min(t.window_paced_max_ms, t.window_max_ms) / 1000,
            max_unpaced_window_s=t.window_max_ms / 1000,
            max_input_chars=s.max_input_chars,
            pace=pace,
        )

    def _voice_lang(self, voice: str) -> str:
        """The language a voice speaks: as its engine lists it (a Piper config's), else by its id."""
        first = blend_lead(voice)
        engine = self._voice_engine.get(first)
        listed = next((v.lang for v in engine.voices() if v.id == first), None) if engine is not None else None
        return listed or lang_for_voice(first)

    def _lang_for(self, params: SynthesisParams) -> str:
        """The request's language, else the voice's, else ``default_lang``."""
        if params.lang:
            return normalize_lang(params.lang)
        try:
            return self._voice_lang(params.voice)
        except UnsupportedLanguage:
            if self.settings.default_lang:
                return normalize_lang(self.settings.default_lang)
            raise

    def open_session(
        self, params: SynthesisParams, *, pace: bool = True, config: SessionConfig | None = None
    ) -> SynthesisSession:
        """Start a streaming session; must be called from a running event loop. ``config`` replaces the
        one the settings make (:meth:`session_config`), for benches and tests that need other windows."""
        engine = self.engine_for(params.voice)
        lang = self._lang_for(params)
        check_language(engine.name, params.voice, self._voice_lang(params.voice), lang)
        # the caller's entries first (they win), then the server's for this language
        server = self.lexicon.get(lang, ()) + self.lexicon.get("*", ())
        lexicon = for_voice(params.lexicon, engine.alphabet, strict=True) + for_voice(
            server, engine.alphabet, strict=False
        )
        return self._session(engine, replace(params, lexicon=lexicon), lang, config or self.session_config(pace=pace))

    def _session(self, engine: Engine, params: SynthesisParams, lang: str, config: SessionConfig) -> SynthesisSession:
        return SynthesisSession(
            engine=engine,
            frontend=self.frontend,
            pool=self.pool,
            params=params,
            lang=lang,
            config=config,
            on_audio=functools.partial(self._delivered, engine.name),
        )

    def _delivered(self, engine: str, audio_s: float, threads: int | None) -> None:
        """A stream of ``engine`` delivered ``audio_s`` of audio, made by jobs of ``threads`` threads
        (:meth:`Pricing.delivered`)."""
        if self._pricing is not None:
            self._pricing.delivered(engine, audio_s, threads)
