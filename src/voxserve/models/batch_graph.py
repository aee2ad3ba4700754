"""Make Kokoro's split decoder take a batch of windows (one per stream) in one call.

The exported decoder assumes a batch of one in four places; each is rewritten so that batch ``B`` works
and a batch of one computes exactly what it did before:

1. the harmonic source is reshaped to ``[1, 1, T]`` before its STFT: the leading 1 becomes ``B``;
2. the padded source is reshaped to ``[1, T']`` for the STFT: the 1 becomes ``B``;
3. the iSTFT divides its output by the window-overlap sum with a ``ScatterND`` whose indices hold batch
   index 0: it becomes a plain division by that sum (1 where the sum is below the threshold, as before);
4. the audio is flattened to ``[1, -1]`` and row 0 taken: it becomes ``[B, samples]``.

``mix_frame``/``mix_vocoder`` become ``[B]`` (one weight per window) and every other input and output
gets a symbolic batch dimension. Windows batched together must have the same number of frames.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from voxserve.errors import ModelError
from voxserve.models.precision import prune_unused

_G = "/decoder/decoder/generator"
_P = "/voxserve/batch/"


def _node(nodes: dict[str, onnx.NodeProto], name: str) -> onnx.NodeProto:
    if name not in nodes:
        raise ModelError(f"the Kokoro decoder has no node {name!r}; is this Kokoro v1.0?")
    return nodes[name]


def make_batchable(model: onnx.ModelProto) -> None:
    """Rewrite the split Kokoro decoder (after :func:`~voxserve.models.graphs.add_stat_inputs`) in place."""
    graph = model.graph
    nodes = {node.name: node for node in graph.node}
    inits: list[onnx.TensorProto] = []
    before: dict[str, list[onnx.NodeProto]] = {}  # new nodes, by the node they must precede

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, _P + name))
        return _P + name

    def insert(at: str, *new: onnx.NodeProto) -> None:
        before.setdefault(at, []).extend(new)

    # 1. source reshape [1, 1, T] -> [B, 1, T]
    source_shape = _node(nodes, f"{_G}/Concat")
    squeezed = _node(nodes, f"{_G}/Squeeze").output[0]
    insert(source_shape.name, helper.make_node("Shape", [squeezed], [_P + "batch"], name=_P + "batch", end=1))
    source_shape.input[0] = _P + "batch"
    # 2. padded source [1, T'] -> [B, T']: take dimension 0 of [B, 1, T'] instead of dimension 1
    _node(nodes, f"{_G}/Gather_2").input[1] = const("dim0", np.array(0, dtype=np.int64))
    # 3. iSTFT normalisation: x[:, i] /= sum[i] where sum[i] > threshold  ->  x / where(sum > threshold, sum, 1)
    scatter = _node(nodes, f"{_G}/istft/stft/ScatterND")
    greater = _node(nodes, f"{_G}/istft/stft/Greater")
    signal, window_sum = scatter.input[0], greater.input[0]
    one = const("one", np.array(1.0, dtype=np.float32))
    zero = const("zero1", np.array([0], dtype=np.int64))
    insert(
        scatter.name,
        helper.make_node("Where", [greater.output[0], window_sum, one], [_P + "sum"], name=_P + "sum"),
        # the overlap sum may be shorter than the signal; past its end the old graph divided by nothing
        helper.make_node("Shape", [signal], [_P + "signal_len"], name=_P + "signal_len", start=-1),
        helper.make_node("Shape", [_P + "sum"], [_P + "sum_len"], name=_P + "sum_len"),
        helper.make_node("Sub", [_P + "signal_len", _P + "sum_len"], [_P + "missing"], name=_P + "missing"),
        helper.make_node("Concat", [zero, _P + "missing"], [_P + "pads"], name=_P + "pads", axis=0),
        helper.make_node("Pad", [_P + "sum", _P + "pads", one], [_P + "sum_full"], name=_P + "sum_full"),
    )
    divide = helper.make_node("Div", [signal, _P + "sum_full"], [scatter.output[0]], name=_P + "normalise")
    # 4. audio [1, -1] then row 0  ->  [B, samples]
    flatten = _node(nodes, "/decoder/Reshape")
    flatten.input[1] = const("rows", np.array([0, -1], dtype=np.int64))
    last = next((node for node in graph.node if "audio" in node.output), None)
    if last is None or last.op_type != "Gather" or last.input[0] != flatten.output[0]:
        raise ModelError("unexpected end of the Kokoro decoder graph; is this Kokoro v1.0?")
    flatten.output[0] = "audio"
    # per-window mixes: [B] -> [B, 1, 1] so they broadcast over [B, C, 1] statistics
    mixes = {mix: _P + mix for mix in ("mix_frame", "mix_vocoder")}
    column = const("column", np.array([-1, 1, 1], dtype=np.int64))
    reshaped = [helper.make_node("Reshape", [mix, column], [shaped], name=shaped) for mix, shaped in mixes.items()]
    out: list[onnx.NodeProto] = list(reshaped)
    for node in graph.node:
        if node is last:
            continue
        for j, name in enumerate(node.input):
            node.input[j] = mixes.get(name, name)
        out.extend(before.get(node.name, []))
        out.append(divide if node is scatter else node)
    del graph.node[:]
    graph.node.extend(out)
    graph.initializer.extend(inits)
    for value in (*graph.input, *graph.output):
        dims = value.type.tensor_type.shape.dim
        if value.name == "audio":
            del dims[:]
            dims.add().dim_param = "batch"
            dims.add().dim_param = "samples"
        elif len(dims):
            dims[0].Clear()
            dims[0].dim_param = "batch"
    prune_unused(model)
