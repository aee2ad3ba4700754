"""Adopting another Kokoro export: structure check and port renaming to ``tokens``/``audio``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from voxserve.models.fileio import sha256_file
from voxserve.models.kokoro_variant import adopt_kokoro_variant, looks_like_kokoro, normalize_ports


def _other_export(path: Path) -> Path:
    """A tiny graph with the onnx-community port names: input_ids, style, speed -> waveform."""
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["ids_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["ids_f"], ["ids_sum"], keepdims=0),
        helper.make_node("ReduceMean", ["style"], ["style_mean"], keepdims=0),
        helper.make_node("Mul", ["ids_sum", "style_mean"], ["scaled"]),
        helper.make_node("Mul", ["scaled", "speed"], ["waveform"]),
    ]
    graph = helper.make_graph(
        nodes,
        "other-kokoro",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "T"]),
            helper.make_tensor_value_info("style", TensorProto.FLOAT, [1, 256]),
            helper.make_tensor_value_info("speed", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("waveform", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _run(path: Path, token_name: str) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {
        token_name: np.array([[0, 5, 7, 0]], dtype=np.int64),
        "style": np.full((1, 256), 0.5, dtype=np.float32),
        "speed": np.array([2.0], dtype=np.float32),
    }
    return np.asarray(session.run(None, feeds)[0])


def test_other_export_is_renamed_and_computes_the_same(tmp_path: Path) -> None:
    path = _other_export(tmp_path / "model_quantized.onnx")
    before = _run(path, "input_ids")
    original_hash = sha256_file(path)
    assert adopt_kokoro_variant(path) is None
    assert sha256_file(path) != original_hash
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [port.name for port in session.get_inputs()] == ["tokens", "style", "speed"]
    assert [port.name for port in session.get_outputs()] == ["audio"]
    np.testing.assert_array_equal(_run(path, "tokens"), before)
    assert float(before[0]) == 12.0 * 0.5 * 2.0


def test_our_export_needs_no_renaming(fetched_root: Path) -> None:
    model = onnx.load(str(fetched_root / "kokoro/kokoro-v1.0.int8.onnx"), load_external_data=False)
    assert normalize_ports(model) is False


def test_non_kokoro_files_are_refused(fetched_root: Path, tmp_path: Path) -> None:
    assert looks_like_kokoro(fetched_root / "kokoro/kokoro-v1.0.int8.onnx") is None
    piper = adopt_kokoro_variant(fetched_root / "piper/en_US-joe-medium.onnx")
    assert piper is not None and "input_lengths" in piper
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff" * 100)
    assert "not a readable ONNX model" in (adopt_kokoro_variant(garbage) or "")
