"""Precision variants of the int8 Kokoro graph (whole model or any split part).

* :func:`dequantize` turns the dynamic-quantized graph back into float32: ``MatMulInteger`` (per-column
  weight scale/zero point) → ``MatMul``, ``ConvInteger`` (per-tensor; the float bias sits at the start of
  the int32 bias chain) → ``Conv``, ``DynamicQuantizeLSTM`` (weights stored [dir, in, 4·hidden]) → ``LSTM``
  and quantized embedding ``Gather`` + ``DequantizeLinear`` → ``Gather``. Each quantized initializer is
  converted once, so weights shared across layers (PL-BERT's 12 layers) stay shared.
* :func:`conv1d_as_conv2d` rewrites 1-D ``Conv`` nodes as 2-D ones over a unit height, which lets
  ONNX Runtime use its blocked NCHWc kernels on CPU.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.onnx_pb import TensorProto

from voxserve.errors import ModelError

FLOAT, FLOAT16 = TensorProto.FLOAT, TensorProto.FLOAT16


class _Graph:
    """Index of a graph: producers, consumers and initializers, with helpers to edit it."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        self.graph = model.graph
        self.inits = {init.name: init for init in self.graph.initializer}
        self.producer = {out: node for node in self.graph.node for out in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in self.graph.node:
            for name in node.input:
                self.consumers[name].append(node)
        self.new_inits: dict[str, np.ndarray] = {}

    def array(self, name: str) -> np.ndarray:
        if name not in self.inits:
            raise ModelError(f"expected {name!r} to be a constant weight; this graph is not a known int8 export")
        return numpy_helper.to_array(self.inits[name])

    def only_consumer(self, name: str, op_type: str) -> onnx.NodeProto:
        users = self.consumers.get(name, [])
        if len(users) != 1 or users[0].op_type != op_type:
            raise ModelError(f"unexpected quantization pattern after {name!r}: {[n.op_type for n in users]}")
        return users[0]

    def float_weight(self, name: str, make: Callable[[], np.ndarray]) -> str:
        """Name of the float version of initializer ``name``, created once by ``make()``."""
        key = name + "_fp32"
        if key not in self.new_inits:
            self.new_inits[key] = np.ascontiguousarray(make()).astype(np.float32)
        return key

    def float_input(self, quantized: str) -> str:
        """The float tensor a ``DynamicQuantizeLinear`` output came from."""
        node = self.producer.get(quantized)
        if node is None or node.op_type != "DynamicQuantizeLinear":
            raise ModelError(f"{quantized!r} is not produced by DynamicQuantizeLinear")
        return node.input[0]


def _scale_of_weight(g: _Graph, scales_mul: str) -> np.ndarray:
    """The weight scale inside ``Mul(activation_scale, weight_scale)``."""
    node = g.producer[scales_mul]
    weights = [name for name in node.input if name in g.inits]
    if node.op_type != "Mul" or len(weights) != 1:
        raise ModelError(f"cannot find the weight scale behind {scales_mul!r}")
    return g.array(weights[0])


Rewrite = tuple[list[onnx.NodeProto], list[onnx.NodeProto]]  # (replacement nodes, nodes made dead)


def _matmul(g: _Graph, node: onnx.NodeProto) -> Rewrite | None:
    a_q, w_q, _, w_zp = node.input
    cast = g.only_consumer(node.output[0], "Cast")
    mul = g.only_consumer(cast.output[0], "Mul")
    scales = next(name for name in mul.input if name != cast.output[0])
    w_scale = _scale_of_weight(g, scales)
    weight = g.float_weight(w_q, lambda: (g.array(w_q).astype(np.float32) - g.array(w_zp)) * w_scale)
    matmul = helper.make_node("MatMul", [g.float_input(a_q), weight], [mul.output[0]], name=node.name + "_fp32")
    return [matmul], [cast, mul]


def _conv(g: _Graph, node: onnx.NodeProto) -> Rewrite | None:
    x_q, w_q, _, w_zp = node.input
    after = g.consumers[node.output[0]]
    bias: str | None = None
    dead: list[onnx.NodeProto] = []
    head = node.output[0]
    if len(after) == 1 and after[0].op_type == "Add":
        add = after[0]
        chain = g.producer[next(name for name in add.input if name != head)]  # Reshape <- Cast <- Floor <- Div
        while chain.op_type != "Div":
            chain = g.producer[chain.input[0]]
        bias = g.float_weight(chain.input[0], lambda: g.array(chain.input[0]))
        dead.append(add)
        head = add.output[0]
    cast = g.only_consumer(head, "Cast")
    mul = g.only_consumer(cast.output[0], "Mul")
    scale_name = next(name for name in mul.input if name != cast.output[0])
    scale_node = g.producer[scale_name]
    w_scale = next(g.array(name) for name in scale_node.input if name in g.inits)
    weight = g.float_weight(w_q, lambda: (g.array(w_q).astype(np.float32) - g.array(w_zp).astype(np.float32)) * w_scale)
    inputs = [g.float_input(x_q), weight] + ([bias] if bias else [])
    conv = helper.make_node("Conv", inputs, [mul.output[0]], name=node.name + "_fp32")
    conv.attribute.extend(node.attribute)
    return [conv], [*dead, cast, mul]


def _lstm(g: _Graph, node: onnx.NodeProto) -> Rewrite | None:
    x, w_q, r_q, b, seq, h0, c0, p, w_scale, w_zp, r_scale, r_zp = (list(node.input) + [""] * 12)[:12]

    def dequant(q: str, scale: str, zp: str) -> np.ndarray:
        values = g.array(q).astype(np.float32) - g.array(zp).astype(np.float32).reshape(-1, 1, 1)
        return np.transpose(values * g.array(scale).reshape(-1, 1, 1), (0, 2, 1))

    w = g.float_weight(w_q, lambda: dequant(w_q, w_scale, w_zp))
    r = g.float_weight(r_q, lambda: dequant(r_q, r_scale, r_zp))
    lstm = helper.make_node("LSTM", [x, w, r, b, seq, h0, c0, p], list(node.output), name=node.name + "_fp32")
    lstm.attribute.extend(node.attribute)
    return [lstm], []


def _gather(g: _Graph, node: onnx.NodeProto) -> Rewrite | None:
    if node.input[0] not in g.inits or g.inits[node.input[0]].data_type not in (2, 3):
        return None
    users = g.consumers[node.output[0]]
    if len(users) != 1 or users[0].op_type != "DequantizeLinear":
        return None
    dq = users[0]
    q, scale, zp = node.input[0], dq.input[1], dq.input[2]
    table = g.float_weight(q, lambda: (g.array(q).astype(np.float32) - g.array(zp).astype(np.float32)) * g.array(scale))
    gather = helper.make_node("Gather", [table, node.input[1]], [dq.output[0]], name=node.name + "_fp32")
    gather.attribute.extend(node.attribute)
    return [gather], [dq]


def dequantize(model: onnx.ModelProto) -> onnx.ModelProto:
    """A float32 copy of a dynamic-quantized graph (see the module docstring)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = _Graph(out)
    replaced: dict[int, list[onnx.NodeProto]] = {}
    dead: set[int] = set()
    handlers: dict[str, Callable[[_Graph, onnx.NodeProto], Rewrite | None]] = {
        "MatMulInteger": _matmul,
        "ConvInteger": _conv,
        "DynamicQuantizeLSTM": _lstm,
        "Gather": _gather,
    }
    for node in g.graph.node:
        handler = handlers.get(node.op_type)
        rewrite = handler(g, node) if handler is not None else None
        if rewrite is None:
            continue
        replaced[id(node)] = rewrite[0]
        dead.update(id(n) for n in rewrite[1])
    nodes: list[onnx.NodeProto] = []
    for node in g.graph.node:
        if id(node) in dead:
            continue
        nodes.extend(replaced.get(id(node), [node]))
    del g.graph.node[:]
    g.graph.node.extend(nodes)
    for name, value in g.new_inits.items():
        g.graph.initializer.append(numpy_helper.from_array(value, name))
    prune_unused(out)
    return out


def prune_unused(model: onnx.ModelProto) -> None:
    """Drop nodes and initializers nothing uses any more (old quantization chains and int8 weights)."""
    graph = model.graph
    needed = {out.name for out in graph.output}
    keep: list[onnx.NodeProto] = []
    for node in reversed(graph.node):
        if any(name in needed for name in node.output):
            keep.append(node)
            needed.update(name for name in node.input if name)
    keep.reverse()
    del graph.node[:]
    graph.node.extend(keep)
    inits = [init for init in graph.initializer if init.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    value_info = [vi for vi in graph.value_info if vi.name in needed]
    del graph.value_info[:]
    graph.value_info.extend(value_info)


def conv1d_as_conv2d(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rewrite every float 1-D ``Conv`` as Unsqueeze → 2-D Conv (height 1) → Squeeze."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {init.name: init for init in graph.initializer}
    axis = numpy_helper.from_array(np.array([2], dtype=np.int64), "/voxserve/conv2d_axis")
    graph.initializer.append(axis)
    converted: set[str] = set()
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        weight = inits.get(node.input[1]) if node.op_type == "Conv" and len(node.input) > 1 else None
        if weight is None or len(weight.dims) != 3:
            nodes.append(node)
            continue
        if weight.name not in converted:
            array = numpy_helper.to_array(weight)
            weight.CopyFrom(numpy_helper.from_array(array[:, :, None, :], weight.name))
            converted.add(weight.name)
        x4, y4 = node.output[0] + "_4d_in", node.output[0] + "_4d"
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        conv = helper.make_node("Conv", [x4, *node.input[1:]], [y4], name=node.name + "_2d")
        for key, value in attrs.items():
            if key == "pads":
                conv.attribute.append(helper.make_attribute(key, [0, value[0], 0, value[1]]))
            elif key in ("strides", "dilations", "kernel_shape"):
                conv.attribute.append(helper.make_attribute(key, [1, value[0]]))
            elif key in ("group", "auto_pad"):
                conv.attribute.append(helper.make_attribute(key, value))
        nodes += [
            helper.make_node("Unsqueeze", [node.input[0], axis.name], [x4], name=node.name + "_unsqueeze"),
            conv,
            helper.make_node("Squeeze", [y4, axis.name], [node.output[0]], name=node.name + "_squeeze"),
        ]
    del graph.node[:]
    graph.node.extend(nodes)
    return out


def convolutions_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    """Run every float ``Conv``/``ConvTranspose`` in float16; everything else stays float32.

    Convolutions are ~95 % of the decoder's arithmetic and what a GPU's tensor cores speed up. The
    rest stays float32 on purpose: the harmonic source integrates F0 into a phase that grows to
    thousands of cycles (float16 would lose it), and the instance norms average squares over time.
    Each convolution's input is cast to float16 once (shared by convolutions reading the same tensor),
    its weights are stored in float16, and its output is cast back.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    inits = {init.name: init for init in graph.initializer}
    halves: dict[str, str] = {}
    as_fp16: dict[str, str] = {}  # float32 tensor -> a float16 copy already computed
    nodes: list[onnx.NodeProto] = []

    def half(name: str) -> str:
        if name not in halves:
            halves[name] = name + "/voxserve_fp16"
            array = numpy_helper.to_array(inits[name]).astype(np.float16)
            graph.initializer.append(numpy_helper.from_array(array, halves[name]))
        return halves[name]

    for node in graph.node:
        weight = node.input[1] if node.op_type in ("Conv", "ConvTranspose") and len(node.input) > 1 else ""
        if weight not in inits or inits[weight].data_type != FLOAT:
            nodes.append(node)
            continue
        source = node.input[0]
        if source not in as_fp16:
            as_fp16[source] = source + "/voxserve_cast_fp16"
            cast = helper.make_node("Cast", [source], [as_fp16[source]], name=as_fp16[source], to=FLOAT16)
            nodes.append(cast)
        conv = onnx.NodeProto()
        conv.CopyFrom(node)
        conv.input[0] = as_fp16[source]
        for j in range(1, len(conv.input)):
            if conv.input[j]:
                conv.input[j] = half(conv.input[j])
        result = node.output[0]
        conv.output[0] = as_fp16[result] = result + "/voxserve_fp16"
        nodes += [conv, helper.make_node("Cast", [conv.output[0]], [result], name=result + "/voxserve_fp32", to=FLOAT)]
    del graph.node[:]
    graph.node.extend(nodes)
    prune_unused(out)
    return out
