"""The int8 graph's convolutions as one integer matrix product each: the same arithmetic, other kernels.

Kokoro's int8 export (dynamic quantization) runs every 1-D convolution as ``ConvInteger``: the
activation is quantized to uint8 at run time (``DynamicQuantizeLinear``), the weights are stored as
uint8, and the int32 result is scaled back to float. ONNX Runtime's CPU ``ConvInteger`` multiplies
uint8 by uint8. Its ``MatMulInteger`` also takes int8 weights, and uint8 × int8 is the product that
AVX-512 VNNI, AMX and ARM's dot-product instructions compute natively.

:func:`convinteger_as_gemm` rewrites each ``ConvInteger`` (one dimension, one group, constant
weights) as an im2col in the graph over the already quantized activation (one byte per value), then
one ``MatMulInteger``::

    x [B, C, T] uint8 → Transpose [B, T, C] → Pad time with x's zero point
      → k Slices, tap j from j·dilation in steps of the stride → Concat [B, T', k·C]
      → MatMulInteger with W [k·C, C_out] int8 → [B, T', C_out] int32 → Transpose [B, C_out, T']

The weights become ``w - 128`` as int8 and their zero point ``zp - 128``, so every product
``(x - x_zp) · (w - w_zp)`` is the same integer and the graph computes the same numbers. Padding with
x's zero point is what ``ConvInteger`` does (a padded value stands for 0.0).

Whether a CPU's kernel computes that exactly, and whether it is faster, depends on the CPU: without
VNNI, x86 adds pairs of uint8 × int8 products in 16 bits, which saturates. :func:`measure` checks both
on the machine it runs on (see :func:`voxserve.models.split_cache.resolve_precision`).
"""

from __future__ import annotations

import hashlib
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from voxserve.errors import ModelError
from voxserve.models.precision import prune_unused

_P = "/voxserve/gemm/"
_SHIFT = 128  # uint8 weight - 128 = int8 weight; the zero point moves with it


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _single(attrs: dict[str, object], name: str) -> int:
    """A 1-D convolution's one value of a per-axis attribute (1 when absent)."""
    values = attrs.get(name, [1])
    return int(values[0])  # type: ignore[index]


class _Consts:
    """Initializers the rewrite adds; equal small constants (pads, slice bounds) are made once."""

    def __init__(self) -> None:
        self.made: dict[str, onnx.TensorProto] = {}

    def add(self, name: str, value: np.ndarray) -> str:
        if _P + name not in self.made:
            self.made[_P + name] = numpy_helper.from_array(value, _P + name)
        return _P + name

    def ints(self, *values: int) -> str:
        return self.add("i64_" + "_".join(str(v) for v in values), np.array(values, dtype=np.int64))


def _rewrite(node: onnx.NodeProto, inits: dict[str, onnx.TensorProto], consts: _Consts) -> list[onnx.NodeProto] | None:
    """The nodes replacing ``node`` (None when it is not a form this rewrite covers)."""
    x_q, w_name = node.input[0], node.input[1]
    x_zp = node.input[2] if len(node.input) > 2 else ""
    w_zp_name = node.input[3] if len(node.input) > 3 else ""
    w_init = inits.get(w_name)
    attrs = _attrs(node)
    if w_init is None or w_init.data_type != TensorProto.UINT8 or len(w_init.dims) != 3 or not x_zp:
        return None
    if attrs.get("group", 1) != 1 or attrs.get("auto_pad", b"NOTSET") != b"NOTSET":
        return None
    if w_zp_name and w_zp_name not in inits:
        return None  # a computed zero point: not this export
    w = numpy_helper.to_array(w_init)
    w_zp = numpy_helper.to_array(inits[w_zp_name]) if w_zp_name else np.zeros((), np.uint8)
    if w_zp.size != 1:
        return None  # per-channel zero points: not this export
    c_out, c_in, k = w.shape
    dilation, stride = _single(attrs, "dilations"), _single(attrs, "strides")
    begin, end = (int(v) for v in attrs.get("pads", [0, 0]))  # type: ignore[attr-defined]
    # tap j reads input j * dilation + t (t on the output): weights ordered [(j, c_in), c_out]
    weight = (w.astype(np.int16) - _SHIFT).astype(np.int8).transpose(2, 1, 0).reshape(k * c_in, c_out)
    weight_name = consts.add(node.name + "/W", np.ascontiguousarray(weight))
    zp_name = consts.add(f"wzp_{int(w_zp.item()) - _SHIFT}", np.array(int(w_zp.item()) - _SHIFT, dtype=np.int8))
    stem = _P + node.name
    nodes = [helper.make_node("Transpose", [x_q], [stem + "/xt"], name=stem + "/xt", perm=[0, 2, 1])]
    padded = stem + "/xt"
    if begin or end:
        pads = consts.ints(0, begin, 0, 0, end, 0)
        nodes.append(helper.make_node("Pad", [padded, pads, x_zp], [stem + "/xp"], name=stem + "/xp"))
        padded = stem + "/xp"
    span = dilation * (k - 1)  # the output is the padded length less this
    taps: list[str] = []
    if k == 1 and stride == 1:
        taps.append(padded)
    else:
        for j in range(k):
            stop = j * dilation - span  # counted from the end; 0 means "to the end"
            ends = stop if stop < 0 else np.iinfo(np.int64).max
            bounds = [consts.ints(j * dilation), consts.ints(ends), consts.ints(1), consts.ints(stride)]
            nodes.append(helper.make_node("Slice", [padded, *bounds], [f"{stem}/tap{j}"], name=f"{stem}/tap{j}"))
            taps.append(f"{stem}/tap{j}")
    columns = taps[0]
    if len(taps) > 1:
        columns = stem + "/col"
        nodes.append(helper.make_node("Concat", taps, [columns], name=columns, axis=2))
    product = [columns, weight_name, x_zp, zp_name]
    nodes.append(helper.make_node("MatMulInteger", product, [stem + "/mm"], name=stem + "/mm"))
    nodes.append(helper.make_node("Transpose", [stem + "/mm"], [node.output[0]], name=stem + "/yt", perm=[0, 2, 1]))
    return nodes


def convinteger_as_gemm(
    model: onnx.ModelProto, only: Callable[[onnx.NodeProto], bool] = lambda node: True
) -> onnx.ModelProto:
    """A copy of ``model`` with every covered ``ConvInteger`` for which ``only`` holds rewritten (see the
    module docstring); the uint8 weights nothing uses any more are dropped. Raises :class:`ModelError`
    when none is covered."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {init.name: init for init in graph.initializer}
    consts = _Consts()
    nodes: list[onnx.NodeProto] = []
    rewritten = 0
    for node in graph.node:
        new = _rewrite(node, inits, consts) if node.op_type == "ConvInteger" and only(node) else None
        nodes.extend(new if new is not None else [node])
        rewritten += new is not None
    if not rewritten:
        raise ModelError("no ConvInteger to rewrite: this graph is not an int8 export")
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(consts.made.values())
    prune_unused(out)
    return out


def cpu_identity() -> str:
    """What :func:`measure`'s verdict depends on: the CPU's architecture, model name and instruction-set
    flags (from ``/proc/cpuinfo`` where there is one) and the ONNX Runtime version, as one short hash."""
    import onnxruntime as ort

    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text(errors="replace").splitlines() if cpuinfo.is_file() else []
    first = {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in lines[:40])}
    parts = [
        platform.machine(),
        platform.processor(),
        first.get("model name", ""),
        first.get("flags", ""),
        ort.__version__,
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class GemmVerdict:
    """What :func:`measure` found on this machine: whether the rewritten convolution computes exactly
    what ``ConvInteger`` does (extreme and random inputs), and the median seconds of each form."""

    exact: bool
    conv_s: float
    gemm_s: float

    @property
    def pays(self) -> bool:
        """Use the rewrite: exact here, and faster."""
        return self.exact and self.gemm_s < self.conv_s


def probe_model(channels: int, kernel: int, dilation: int) -> onnx.ModelProto:
    """A float → int32 graph of one quantized convolution like the int8 export's (uint8 weights, a
    per-tensor zero point, "same" padding), weights drawn from a fixed seed plus one all-255 filter."""
    rng = np.random.default_rng(0)
    w = rng.integers(0, 256, (channels, channels, kernel)).astype(np.uint8)
    w[0] = 255  # with all-255 activations: sums of uint8 × int8 pairs far past 16 bits
    pad = dilation * (kernel - 1) // 2
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="q"),
        helper.make_node(
            "ConvInteger",
            ["xq", "w", "xz", "wz"],
            ["y"],
            name="conv",
            pads=[pad, pad],
            dilations=[dilation],
            kernel_shape=[kernel],
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, channels, None])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array(60, dtype=np.uint8), "wz")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def measure(
    threads: int = 1, channels: int = 128, kernel: int = 7, dilation: int = 3, frames: int = 2400, repeats: int = 5
) -> GemmVerdict:
    """Check and time the rewrite on this machine, at ``threads`` intra-op threads, on a convolution
    shaped like the vocoder's (a few milliseconds per call). Exact means equal int32 outputs for
    activations all at the top of their range (where 16-bit pair sums saturate) and for random ones."""
    import onnxruntime as ort

    conv = probe_model(channels, kernel, dilation)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    sessions = [
        ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
        for m in (conv, convinteger_as_gemm(conv))
    ]
    rng = np.random.default_rng(1)
    top = np.ones((1, channels, frames), dtype=np.float32)
    top[0, 0, 0] = 0.0  # the quantized range starts at 0: every other value is 255
    noise = rng.standard_normal((2, channels, frames)).astype(np.float32)
    exact = all(np.array_equal(*(s.run(None, {"x": x})[0] for s in sessions)) for x in (top, noise))
    times: list[list[float]] = [[], []]
    for _ in range(repeats):
        for i, session in enumerate(sessions):
            start = time.perf_counter()
            session.run(None, {"x": noise[:1]})
            times[i].append(time.perf_counter() - start)
    return GemmVerdict(exact, statistics.median(times[0]), statistics.median(times[1]))
