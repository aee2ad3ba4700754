"""One factory for ONNX Runtime sessions, shared by every engine."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import onnxruntime as ort

from voxserve.engines.cpus import usable_cores
from voxserve.errors import ModelError

log = logging.getLogger(__name__)

# TensorRT is left out of ``auto``: it builds an engine for every new input shape (seconds each), and
# decoder windows and batches come in many shapes. GPU builds of onnxruntime list it even where its
# libraries are missing.
_PREFERENCE = ("CUDAExecutionProvider", "CPUExecutionProvider")
# ONNX Runtime's default is to time every convolution algorithm for each new input shape: with windows
# and batches of many sizes that search, not the model, would dominate. cuDNN's heuristic query failed
# outright on an H200 for the decoder's first transposed convolution at a batch of 59 float16 windows
# (docs/gpu.md, "Measured on a lent H200"), so convolutions take cuDNN's default algorithm: no search.
CUDA_OPTIONS = {"cudnn_conv_algo_search": "DEFAULT", "cudnn_conv_use_max_workspace": "1"}


def resolve_providers(requested: list[str]) -> list[str]:
    """Turn the ``providers`` setting into a list ONNX Runtime accepts.

    ``auto`` means: CUDA when available, then CPU (CPU always last as fallback); TensorRT only when
    asked for. Short names ``cpu``/``cuda``/``tensorrt`` are accepted.
    """
    available = set(ort.get_available_providers())
    short = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "tensorrt": "TensorrtExecutionProvider"}
    if not requested or requested == ["auto"]:
        chosen = [p for p in _PREFERENCE if p in available]
    else:
        chosen = []
        for name in requested:
            full = short.get(name.lower(), name)
            if full not in available:
                raise ModelError(
                    f"ONNX Runtime provider {full!r} is not available here (have: {sorted(available)}); "
                    "set VOXSERVE_PROVIDERS=auto or install the matching onnxruntime build"
                )
            chosen.append(full)
    if "CPUExecutionProvider" not in chosen:
        chosen.append("CPUExecutionProvider")
    return chosen


class RunControl:
    """Lets another thread stop one stream's model calls.

    Pass it to an engine's ``stream``; :meth:`cancel` (from any thread) aborts the ONNX Runtime call
    in flight, and every later call with it fails at once with :class:`~voxserve.errors.Cancelled`. So
    a cancelled stream stops costing CPU immediately, not after its current decoder window.
    """

    def __init__(self) -> None:
        self.options = ort.RunOptions()
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True
        self.options.terminate = True

    @property
    def cancelled(self) -> bool:
        return self._cancelled


_BUDGET = threading.local()


@contextlib.contextmanager
def thread_scoped(local: threading.local, name: str, value: object) -> Iterator[None]:
    """``local.<name>`` is ``value`` inside the block (for this thread), and what it was after."""
    before = getattr(local, name, None)
    setattr(local, name, value)
    try:
        yield
    finally:
        setattr(local, name, before)


def thread_budget(threads: int | None) -> contextlib.AbstractContextManager[None]:
    """Model calls made by this thread inside the block use at most ``threads`` intra-op threads
    (:class:`ElasticSession`); ``None`` lifts the limit."""
    return thread_scoped(_BUDGET, "threads", threads)


def set_thread_budget(threads: int | None) -> None:
    """Change this thread's limit inside a :func:`thread_budget` block (a job readmitted with other cores)."""
    _BUDGET.threads = threads


def current_thread_budget() -> int | None:
    """The limit :func:`thread_budget` set for this thread, if any."""
    return getattr(_BUDGET, "threads", None)


class ElasticSession:
    """One graph loaded once per thread count: each call runs on the widest that fits this thread's
    :func:`thread_budget`.

    ONNX Runtime fixes a session's intra-op threads when it is created. On a small CPU box one stream
    decodes fastest on all cores, but two streams each on one core beat two streams taking turns on
    both: a call on all threads is less than that many times faster than on one, and one-thread calls
    run side by side at nearly full speed. A one-thread session runs on the calling thread, so any
    number of workers can share it.

    ``weights`` are the buffers the sessions were given in place of their own copies of the graph's
    weights (:meth:`SessionFactory.create`): ONNX Runtime does not own them, so they live as long as this.
    """

    def __init__(
        self, sessions: dict[int, ort.InferenceSession], weights: dict[str, ort.OrtValue] | None = None
    ) -> None:
        if not sessions:
            raise ValueError("ElasticSession needs at least one session")
        self._levels = sorted(sessions, reverse=True)
        self._sessions = sessions
        self.widest = sessions[self._levels[0]]
        self.weights: dict[str, ort.OrtValue] = weights or {}

    @property
    def levels(self) -> tuple[int, ...]:
        return tuple(self._levels)

    def session_for(self, threads: int | None) -> ort.InferenceSession:
        if threads is None:
            return self.widest
        level = next((n for n in self._levels if n <= threads), self._levels[-1])
        return self._sessions[level]

    def run(self, output_names: Sequence[str] | None, input_feed: dict[str, Any], run_options: Any = None) -> Any:
        return self.session_for(current_thread_budget()).run(output_names, input_feed, run_options)

    # the rest of InferenceSession that voxserve uses: the graph is the same at every level
    def get_inputs(self) -> Any:
        return self.widest.get_inputs()

    def get_outputs(self) -> Any:
        return self.widest.get_outputs()

    def io_binding(self) -> Any:
        return self.session_for(current_thread_budget()).io_binding()

    def run_with_iobinding(self, binding: Any, run_options: Any = None) -> None:
        self.session_for(current_thread_budget()).run_with_iobinding(binding, run_options)


class LazySession:
    """A session loaded on its first use. The whole (unsplit) models serve only sentence mode and direct
    engine calls; a server that streams in windows never touches them, so they cost it no memory."""

    def __init__(self, load: Callable[[], ort.InferenceSession | ElasticSession]) -> None:
        self._load = load
        self._session: ort.InferenceSession | ElasticSession | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._session is not None

    def _get(self) -> ort.InferenceSession | ElasticSession:
        with self._lock:
            if self._session is None:
                self._session = self._load()
            return self._session

    def run(self, output_names: Sequence[str] | None, input_feed: dict[str, Any], run_options: Any = None) -> Any:
        return self._get().run(output_names, input_feed, run_options)

    def get_inputs(self) -> Any:
        return self._get().get_inputs()

    def get_outputs(self) -> Any:
        return self._get().get_outputs()

    def io_binding(self) -> Any:
        return self._get().io_binding()

    def run_with_iobinding(self, binding: Any, run_options: Any = None) -> None:
        self._get().run_with_iobinding(binding, run_options)


OnnxSession: TypeAlias = ort.InferenceSession | ElasticSession | LazySession


def thread_levels(threads: int) -> tuple[int, ...]:
    """Thread counts an elastic session is built for: all ``threads``, about their square root, and 1.

    Three sessions per graph at most (memory): one stream gets every core, a few streams a root's worth
    each, many streams one core each (the cheapest per audio second). 2 cores: (2, 1); 4: (4, 2, 1);
    16: (16, 4, 1).
    """
    return tuple(sorted({threads, max(1, round(threads**0.5)), 1}, reverse=True))


# Ops whose CPU kernels pre-pack a constant weight (inputs after the first) into a layout of their own,
# per session, and drop ONNX Runtime's copy of it. Their weights are left to each session: a shared
# buffer would stay alive beside every session's packed one.
PREPACKING_OPS = frozenset(
    {
        "Attention",
        "ConvTranspose",
        "DynamicQuantizeLSTM",
        "DynamicQuantizeMatMul",
        "FusedMatMul",
        "GRU",
        "Gemm",
        "LSTM",
        "MatMul",
        "MatMulInteger",
        "MatMulIntegerToFloat",
        "MatMulNBits",
        "QGemm",
        "QLinearConv",
        "QLinearMatMul",
    }
)


def shared_weights(graph: str) -> dict[str, ort.OrtValue]:
    """The initializers of the graph file ``graph`` as OrtValues over numpy buffers of their own, ready
    for ``SessionOptions.add_initializer``; those a :data:`PREPACKING_OPS` node reads as a weight are left out."""
    import onnx  # only elastic loading needs it
    from onnx import numpy_helper

    model = onnx.load(graph)
    packed = {name for node in model.graph.node if node.op_type in PREPACKING_OPS for name in node.input[1:]}
    return {
        tensor.name: ort.OrtValue.ortvalue_from_numpy(numpy_helper.to_array(tensor))
        for tensor in model.graph.initializer
        if tensor.name not in packed
    }


@contextlib.contextmanager
def memory_file(data: bytes | None = None) -> Iterator[str | None]:
    """A file that lives in memory only (Linux ``memfd``), holding ``data`` if given: its path while
    inside the block, or None where the platform has no such files or ``data`` could not be written
    (then the caller falls back to what it would do without one)."""
    memfd_create = getattr(os, "memfd_create", None)
    try:
        fd = memfd_create("voxserve-graph") if memfd_create is not None else None
    except OSError:
        fd = None
    if fd is None:
        yield None
        return
    try:
        path = f"/proc/self/fd/{fd}"
        try:
            usable = os.path.exists(path)  # else no /proc
            if usable and data is not None:
                with open(fd, "wb", closefd=False) as file:
                    file.write(data)
        except OSError:
            usable = False
        yield path if usable else None
    finally:
        os.close(fd)


class SessionFactory:
    """Builds ONNX Runtime sessions with the process-wide provider and thread settings.

    ``spinning`` lets ONNX Runtime's idle pool threads busy-wait for the next call. Every session has
    its own pool, and a streaming engine alternates between several sessions (front, prosody, decoder),
    so spinning threads of one session steal the cores the next one needs. Off by default.

    ``elastic`` (CPU only) loads each graph at several thread counts (:func:`thread_levels`) as one
    :class:`ElasticSession`, so concurrent streams can each take a share of the cores. Its sessions
    share one copy of the graph's weights (:meth:`create`).

    ``read_sealed`` (the model store's) returns a graph's bytes when its file is encrypted at rest,
    decrypted in memory, else ``None``; the bytes go to ONNX Runtime, never to disk.
    """

    def __init__(
        self,
        providers: list[str],
        intra_op_threads: int = 0,
        *,
        spinning: bool = False,
        elastic: bool = False,
        read_sealed: Callable[[Path], bytes | None] | None = None,
    ) -> None:
        self.read_sealed = read_sealed
        self.providers = resolve_providers(providers)
        self.intra_op_threads = intra_op_threads or usable_cores()
        self.spinning = spinning
        wide = self.intra_op_threads
        self.levels = thread_levels(wide) if elastic and not self.on_gpu and wide > 1 else (wide,)

    def provider_list(self) -> list[str | tuple[str, dict[str, str]]]:
        """The providers with their options, as ``InferenceSession`` takes them."""
        return [(name, CUDA_OPTIONS) if name == "CUDAExecutionProvider" else name for name in self.providers]

    @property
    def on_gpu(self) -> bool:
        return self.providers[0] != "CPUExecutionProvider"

    @property
    def elastic(self) -> bool:
        return len(self.levels) > 1

    def options(self, threads: int | None = None) -> ort.SessionOptions:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or self.intra_op_threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        spin = "1" if self.spinning else "0"
        opts.add_session_config_entry("session.intra_op.allow_spinning", spin)
        opts.add_session_config_entry("session.inter_op.allow_spinning", spin)
        if not self.on_gpu:
            # no memory arena: an arena keeps the peak of the largest call it ran (a long window's
            # audio-rate activations) for the life of the process, per session and thread count; freed
            # tensors go back to the allocator instead, and large ones to the system
            opts.enable_cpu_mem_arena = False
        return opts

    def lazy(self, path: Path | str | bytes) -> LazySession:
        """A session for ``path`` at the widest thread count, loaded when first used."""
        return LazySession(lambda: self.create(path, elastic=False))

    def create(self, path: Path | str | bytes, *, elastic: bool = True) -> OnnxSession:
        """A session for ``path``; an :class:`ElasticSession` when the factory is elastic (and ``elastic``)."""
        levels = self.levels if elastic else self.levels[:1]
        if self.read_sealed is not None and not isinstance(path, bytes):
            path = self.read_sealed(Path(path)) or path  # decrypted once for every thread level
        if len(levels) == 1:
            return self._load(path, levels[0])
        return self._load_shared(path, levels) or ElasticSession({n: self._load(path, n) for n in levels})

    def _load_shared(self, path: Path | str | bytes, levels: tuple[int, ...]) -> ElasticSession | None:
        """``path`` at every thread count in ``levels``, all reading one copy of its weights; ``None`` where
        the platform has no in-memory files (then each level loads its own copy).

        Each ``InferenceSession`` would otherwise hold the graph's weights itself. Sessions can instead be
        given the caller's buffers (``add_initializer``), but ONNX Runtime's graph optimizations rewrite
        some initializers in place under the same name (the transpose optimizer transposes and reshapes
        them), and a given buffer replaces the rewritten tensor: the model would compute with the wrong
        weights. So the graph is optimized once, written to an in-memory file (never to disk: the graph
        may be a sealed model's decrypted bytes), and every level loads that optimized graph with
        optimizations off, sharing its weights. ONNX Runtime loads a file by path, so no session keeps a
        copy of the graph's bytes either.
        """
        with memory_file() as optimized:
            if optimized is None:
                return None
            options = self.options(levels[0])
            options.optimized_model_filepath = optimized
            options.add_session_config_entry("session.save_model_format", "ONNX")
            self._load(path, levels[0], options)  # the optimizing session is dropped at once
            weights = shared_weights(optimized)
            sessions = {}
            for threads in levels:
                options = self.options(threads)
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # done above
                for name, value in weights.items():
                    options.add_initializer(name, value)
                sessions[threads] = self._load(optimized, threads, options)
        return ElasticSession(sessions, weights)

    def _load(
        self, path: Path | str | bytes, threads: int, options: ort.SessionOptions | None = None
    ) -> ort.InferenceSession:
        """A session for ``path`` at ``threads``. A graph given as bytes (a sealed model, decrypted) is
        loaded from an in-memory file where there are such: ONNX Runtime keeps the bytes it is given
        for the session's life, a second copy of the weights."""
        options = options or self.options(threads)
        if isinstance(path, bytes):
            with memory_file(path) as copy:
                return self._session(copy or path, options, "in-memory graph")
        if not Path(path).is_file():
            raise ModelError(f"model file {path} is missing; run 'voxserve models fetch'")
        return self._session(str(path), options, str(path))

    def _session(self, source: str | bytes, options: ort.SessionOptions, where: str) -> ort.InferenceSession:
        try:
            return ort.InferenceSession(source, sess_options=options, providers=self.provider_list())
        except Exception as exc:  # onnxruntime raises several unrelated types
            raise ModelError(
                f"could not load {where}: {exc}; the file may be corrupt, run 'voxserve models fetch --force'"
            ) from exc
