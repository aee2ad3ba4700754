from __future__ import annotations

import os
from pathlib import Path

import pytest

from voxserve.engines import onnx
from voxserve.engines.onnx import SessionFactory, resolve_providers
from voxserve.errors import ModelError
from voxserve.models import ModelStore


def test_auto_providers_end_with_cpu() -> None:
    providers = resolve_providers(["auto"])
    assert providers[-1] == "CPUExecutionProvider"


def test_auto_takes_cuda_but_not_tensorrt(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU build lists TensorRT even without its libraries; ``auto`` takes CUDA, TensorRT only by name.
    (No GPU build here: the list is what onnxruntime-gpu 1.31 reports.)"""
    gpu_build = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(onnx.ort, "get_available_providers", lambda: gpu_build)
    assert resolve_providers(["auto"]) == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert resolve_providers(["tensorrt", "cuda"]) == gpu_build
    factory = SessionFactory(["auto"], 1)
    assert factory.on_gpu and not factory.elastic
    cuda, cpu = factory.provider_list()
    assert cuda == ("CUDAExecutionProvider", onnx.CUDA_OPTIONS) and cpu == "CPUExecutionProvider"
    assert onnx.CUDA_OPTIONS["cudnn_conv_algo_search"] == "DEFAULT"  # no per-shape search, no heuristic query


def test_unavailable_provider_is_a_clear_error() -> None:
    with pytest.raises(ModelError, match="not available"):
        resolve_providers(["NoSuchExecutionProvider"])


def test_missing_and_corrupt_model_files(tmp_path: Path) -> None:
    factory = SessionFactory(["cpu"], 1)
    with pytest.raises(ModelError, match="voxserve models fetch"):
        factory.create(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="corrupt"):
        factory.create(bad)


def test_idle_threads_do_not_spin_unless_asked() -> None:
    quiet = SessionFactory(["cpu"], 2).options()
    assert quiet.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    busy = SessionFactory(["cpu"], 2, spinning=True).options()
    assert busy.get_session_config_entry("session.intra_op.allow_spinning") == "1"


def test_a_cancelled_run_control_aborts_the_call_in_flight(model_store: ModelStore) -> None:
    import threading
    import time

    import numpy as np

    from voxserve.engines.onnx import RunControl
    from voxserve.engines.windowing import run_graph
    from voxserve.errors import Cancelled

    session = SessionFactory(["cpu"], 1).create(model_store.kokoro_model())
    feeds = {
        "tokens": np.array([[0, *([50, 83, 156, 102] * 120), 0]], dtype=np.int64),  # ~40 s of speech
        "style": np.zeros((1, 256), dtype=np.float32),
        "speed": np.array([1.0], dtype=np.float32),
    }
    control = RunControl()
    threading.Timer(0.3, control.cancel).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled):
        run_graph(session, None, feeds, "Kokoro", control)
    assert time.monotonic() - t0 < 2.0  # the whole call takes tens of seconds on one thread
    with pytest.raises(Cancelled):  # and every later call fails at once
        run_graph(session, None, feeds, "Kokoro", control)


def test_thread_levels_are_all_cores_their_root_and_one() -> None:
    from voxserve.engines.onnx import thread_levels

    assert thread_levels(1) == (1,)
    assert thread_levels(2) == (2, 1)
    assert thread_levels(4) == (4, 2, 1)
    assert thread_levels(16) == (16, 4, 1)  # at most three sessions per graph
    assert thread_levels(8) == (8, 3, 1)


def test_an_elastic_session_runs_at_the_callers_thread_budget(model_store: ModelStore) -> None:
    import numpy as np

    from voxserve.engines.onnx import ElasticSession, current_thread_budget, thread_budget

    factory = SessionFactory(["cpu"], 2, elastic=True)
    assert factory.elastic and factory.levels == (2, 1)
    session = factory.create(model_store.piper_model())
    assert isinstance(session, ElasticSession) and session.levels == (2, 1)
    assert not isinstance(factory.create(model_store.piper_model(), elastic=False), ElasticSession)
    assert SessionFactory(["cpu"], 1, elastic=True).levels == (1,)  # nothing to share

    picked = {}
    for budget in (None, 2, 1):
        with thread_budget(budget):
            assert current_thread_budget() == budget
            picked[budget] = session.session_for(current_thread_budget())
    assert picked[None] is picked[2] is session.widest and picked[1] is not picked[2]
    assert current_thread_budget() is None

    feeds = {
        "input": np.array([[1, 0, 20, 0, 21, 0, 22, 0, 2]], dtype=np.int64),
        "input_lengths": np.array([9], dtype=np.int64),
        "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32),  # no noise: deterministic
    }
    wide = session.run(None, feeds)[0]
    with thread_budget(1):
        narrow = session.run(None, feeds)[0]
    assert wide.shape == narrow.shape and float(np.abs(wide - narrow).max()) < 1e-3


def test_a_lazy_session_loads_once_on_first_use(model_store: ModelStore) -> None:
    import threading

    factory = SessionFactory(["cpu"], 1)
    loads: list[int] = []

    def load() -> onnx.OnnxSession:
        loads.append(1)
        return factory.create(model_store.piper_model(), elastic=False)

    lazy = onnx.LazySession(load)
    assert not lazy.loaded and loads == []
    threads = [threading.Thread(target=lazy.get_inputs) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert lazy.loaded and loads == [1]
    assert [i.name for i in lazy.get_inputs()] == [i.name for i in load().get_inputs()]


def test_elastic_levels_share_one_copy_of_the_weights(model_store: ModelStore) -> None:
    """The Piper voice's second thread level costs a fraction of the first: its convolution weights (not
    pre-packed by ONNX Runtime) are held once for both sessions."""
    if not hasattr(os, "memfd_create") or not Path("/proc/self/status").is_file():
        pytest.skip("shared weights need Linux (in-memory files, /proc)")
    from bench.graph_memory import load_mb  # in a fresh interpreter: RSS inside pytest depends on every test

    one = load_mb(str(model_store.piper_model()), 2, "single")
    two = load_mb(str(model_store.piper_model()), 2, "elastic")
    assert two - one < 0.4 * one, (one, two)  # a copy per level costs about as much as the first


def test_a_graph_loaded_from_bytes_keeps_no_copy_of_them(model_store: ModelStore) -> None:
    """A sealed model reaches ONNX Runtime as decrypted bytes, and a session made from bytes keeps them
    for its life: a second copy of the weights. Loaded from an in-memory file instead, it costs what a
    session from the file costs."""
    if not hasattr(os, "memfd_create") or not Path("/proc/self/status").is_file():
        pytest.skip("in-memory files need Linux")
    from bench.graph_memory import load_mb  # in a fresh interpreter: RSS inside pytest depends on every test

    model = model_store.piper_model()
    size_mb = model.stat().st_size / 2**20
    from_file, from_bytes = load_mb(str(model), 2, "single"), load_mb(str(model), 2, "bytes")
    assert from_bytes - from_file < 0.3 * size_mb, (from_file, from_bytes, size_mb)


def test_elastic_levels_compute_what_a_plain_session_does(model_store: ModelStore) -> None:
    """Every level of an elastic session, from a file or from bytes (a sealed model), gives exactly what a
    session loaded on its own at that thread count gives: ONNX Runtime's optimizations rewrite some of
    this graph's weights (layer-norm scales reshaped), and the shared ones are the rewritten ones."""
    import numpy as np

    from voxserve.engines.onnx import ElasticSession, thread_budget

    model = model_store.piper_model()
    feeds = {
        "input": np.array([[1, 0, 20, 0, 21, 0, 22, 0, 23, 0, 24, 0, 2]], dtype=np.int64),
        "input_lengths": np.array([13], dtype=np.int64),
        "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32),  # no noise: deterministic
    }
    factory = SessionFactory(["cpu"], 2, elastic=True)
    for source in (model, model.read_bytes()):
        elastic = factory.create(source)
        assert isinstance(elastic, ElasticSession) and elastic.levels == (2, 1)
        if hasattr(os, "memfd_create"):
            assert elastic.weights  # held here: ONNX Runtime does not own them
        for threads in elastic.levels:
            plain = SessionFactory(["cpu"], threads).create(model)
            with thread_budget(threads):
                shared = elastic.run(None, feeds)
            for got, want in zip(shared, plain.run(None, feeds), strict=True):
                np.testing.assert_array_equal(got, want)
