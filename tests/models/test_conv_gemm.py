"""ConvInteger rewritten as im2col + MatMulInteger: the same int32 results, and the choice made by
measuring on this machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from voxserve.errors import ModelError
from voxserve.models import conv_gemm, split_cache
from voxserve.models.conv_gemm import GemmVerdict, convinteger_as_gemm


def _conv_model(c_in: int, c_out: int, kernel: int, **attrs: Any) -> onnx.ModelProto:
    """Float input → DynamicQuantizeLinear → ConvInteger (uint8 weights in [64, 192]: their int8 form
    stays within ±64, so no CPU's 16-bit pair sums saturate and every kernel must agree exactly)."""
    rng = np.random.default_rng(kernel * 100 + c_in)
    w = rng.integers(64, 193, (c_out, c_in, kernel)).astype(np.uint8)
    graph = helper.make_graph(
        [
            helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="q"),
            helper.make_node(
                "ConvInteger", ["xq", "w", "xz", "wz"], ["y"], name="conv", kernel_shape=[kernel], **attrs
            ),
            helper.make_node("Cast", ["y"], ["yf"], name="cast", to=TensorProto.FLOAT),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, c_in, None])],
        [helper.make_tensor_value_info("yf", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(131, dtype=np.uint8), "wz")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


@pytest.mark.parametrize(
    ("kernel", "attrs"),
    [
        (1, {}),
        (3, {"pads": [1, 1]}),
        (7, {"pads": [9, 9], "dilations": [3]}),
        (11, {"pads": [25, 25], "dilations": [5]}),
        (5, {"pads": [4, 0]}),  # causal: all the padding before
        (3, {}),  # no padding: the output is shorter than the input
        (3, {"pads": [1, 1], "strides": [2]}),
        (12, {"pads": [3, 3], "strides": [6]}),
        (1, {"strides": [3]}),
    ],
)
def test_rewrite_computes_what_convinteger_computes(kernel: int, attrs: dict[str, Any]) -> None:
    model = _conv_model(12, 20, kernel, **attrs)
    rewritten = convinteger_as_gemm(model)
    ops = [node.op_type for node in rewritten.graph.node]
    assert "ConvInteger" not in ops and ops.count("MatMulInteger") == 1
    assert {init.name for init in rewritten.graph.initializer}.isdisjoint({"w", "wz"})  # uint8 weights dropped
    x = np.random.default_rng(kernel).standard_normal((2, 12, 150)).astype(np.float32)  # a batch of two
    expected = _run(model, x)
    assert expected.shape[0] == 2 and np.abs(expected).max() > 0
    np.testing.assert_array_equal(_run(rewritten, x), expected)


def test_forms_it_does_not_cover_are_left_as_they_are() -> None:
    with pytest.raises(ModelError, match="no ConvInteger to rewrite"):
        convinteger_as_gemm(_conv_model(4, 4, 3, group=2))
    both = _conv_model(4, 4, 3, pads=[1, 1])
    both.graph.node.insert(2, helper.make_node("ConvInteger", ["xq", "w2", "xz"], ["y2"], name="grouped", group=2))
    both.graph.initializer.append(numpy_helper.from_array(np.ones((4, 2, 3), dtype=np.uint8), "w2"))
    both.graph.output.append(helper.make_tensor_value_info("y2", TensorProto.INT32, None))
    ops = [node.op_type for node in convinteger_as_gemm(both).graph.node]
    assert ops.count("ConvInteger") == 1 and ops.count("MatMulInteger") == 1


def test_measure_checks_and_times_both_forms_here() -> None:
    verdict = conv_gemm.measure(threads=1, channels=16, frames=200, repeats=3)
    assert verdict.conv_s > 0 and verdict.gemm_s > 0
    assert verdict.pays == (verdict.exact and verdict.gemm_s < verdict.conv_s)


def test_auto_precision_follows_the_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto: fp16 on a GPU; on a CPU int8-gemm only where the rewrite is exact and faster at every
    thread level checked (an inexact kernel, as x86 without VNNI has, cannot be made on a VNNI machine,
    hence the stand-in verdicts)."""
    asked: list[int] = []

    def verdict(exact: bool, gemm_s: float) -> None:
        def fake(threads: int) -> GemmVerdict:
            asked.append(threads)
            return GemmVerdict(exact=exact, conv_s=1.0, gemm_s=gemm_s)

        monkeypatch.setattr(split_cache, "measure", fake)

    verdict(True, 0.5)
    assert split_cache.resolve_precision("auto", on_gpu=False, threads=4) == "int8-gemm"
    assert asked == [1, 4]
    verdict(False, 0.5)
    assert split_cache.resolve_precision("auto", on_gpu=False, threads=2) == "int8"
    verdict(True, 2.0)
    assert split_cache.resolve_precision("auto", on_gpu=False) == "int8"
    assert split_cache.resolve_precision("auto", on_gpu=True) == "fp16"
    assert split_cache.resolve_precision("int8-gemm", on_gpu=False) == "int8-gemm"
    with pytest.raises(ModelError, match="unknown precision 'bf16'"):
        split_cache.resolve_precision("bf16", on_gpu=False)


def test_auto_verdict_is_kept_for_this_cpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The first start measures and keeps the verdict; later starts on the same CPU and thread count reuse
    it (a busy moment must not flip the variant); another thread count or a damaged record measures again."""
    measured: list[int] = []

    def fake(threads: int) -> GemmVerdict:
        measured.append(threads)
        return GemmVerdict(exact=True, conv_s=1.0, gemm_s=0.5)

    monkeypatch.setattr(split_cache, "measure", fake)
    record = tmp_path / "kokoro" / "precision.json"
    assert split_cache.resolve_precision("auto", on_gpu=False, threads=2, remember=record) == "int8-gemm"
    assert measured == [1, 2] and json.loads(record.read_text())["cpu"] == conv_gemm.cpu_identity()
    monkeypatch.setattr(split_cache, "measure", lambda threads: GemmVerdict(exact=False, conv_s=1.0, gemm_s=0.5))
    assert split_cache.resolve_precision("auto", on_gpu=False, threads=2, remember=record) == "int8-gemm"
    assert split_cache.resolve_precision("auto", on_gpu=False, threads=4, remember=record) == "int8"
    record.write_text("{not json")
    monkeypatch.setattr(split_cache, "measure", fake)
    assert split_cache.resolve_precision("auto", on_gpu=False, threads=4, remember=record) == "int8-gemm"
    assert measured == [1, 2, 1, 4]
