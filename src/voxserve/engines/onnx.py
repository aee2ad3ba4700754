"""One factory for ONNX Runtime sessions, shared by every engine."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import onnxruntime as ort

from voxserve.errors import ModelError

log = logging.getLogger(__name__)

_PREFERENCE = ("TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider")


def resolve_providers(requested: list[str]) -> list[str]:
    """Turn the ``providers`` setting into a list ONNX Runtime accepts.

    ``auto`` means: the best available of TensorRT, CUDA, CPU (CPU always last as fallback).
    Short names ``cpu``/``cuda``/``tensorrt`` are accepted.
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


class SessionFactory:
    """Builds ``InferenceSession`` objects with the process-wide provider and thread settings.

    ``spinning`` lets ONNX Runtime's idle pool threads busy-wait for the next call. Every session has
    its own pool, and a streaming engine alternates between several sessions (front, prosody, decoder),
    so spinning threads of one session steal the cores the next one needs: on 2 cores, Kokoro's
    front + prosody take 69 ms with spinning and 34 ms without. Off by default.
    """

    def __init__(self, providers: list[str], intra_op_threads: int = 0, *, spinning: bool = False) -> None:
        self.providers = resolve_providers(providers)
        self.intra_op_threads = intra_op_threads or (os.cpu_count() or 1)
        self.spinning = spinning

    @property
    def on_gpu(self) -> bool:
        return self.providers[0] != "CPUExecutionProvider"

    def options(self) -> ort.SessionOptions:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.intra_op_threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        spin = "1" if self.spinning else "0"
        opts.add_session_config_entry("session.intra_op.allow_spinning", spin)
        opts.add_session_config_entry("session.inter_op.allow_spinning", spin)
        return opts

    def create(self, path: Path | str | bytes) -> ort.InferenceSession:
        source = path if isinstance(path, bytes) else str(path)
        if not isinstance(path, bytes) and not Path(path).is_file():
            raise ModelError(f"model file {path} is missing; run 'voxserve models fetch'")
        try:
            return ort.InferenceSession(source, sess_options=self.options(), providers=self.providers)
        except Exception as exc:  # onnxruntime raises several unrelated types
            where = "in-memory graph" if isinstance(path, bytes) else str(path)
            raise ModelError(
                f"could not load {where}: {exc}; the file may be corrupt, run 'voxserve models fetch --force'"
            ) from exc
