"""Accepting a Kokoro ONNX export other than the one the manifest pins (e.g. the Hugging Face one).

Other exports of Kokoro v1.0 name their ports differently: ``onnx-community/Kokoro-82M-v1.0-ONNX``
takes ``input_ids`` and returns ``waveform`` where kokoro-onnx's file (our manifest's) has ``tokens``
and ``audio``. :func:`adopt_kokoro_variant` checks the structure and renames those ports to ours, so
the engine can feed it the same way. Internal tensor names differ between exports, so graph-level
tools (the decoder split) must check what they find rather than assume.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from google.protobuf.message import DecodeError


def _load(path: Path) -> onnx.ModelProto | str:
    try:
        return onnx.load(str(path), load_external_data=False)
    except (OSError, ValueError, DecodeError) as exc:
        return f"not a readable ONNX model: {type(exc).__name__}: {exc}"


def _problem(model: onnx.ModelProto) -> str | None:
    inputs = {value.name for value in model.graph.input}
    if not {"style", "speed"} <= inputs or not inputs & {"tokens", "input_ids"}:
        return f"inputs {sorted(inputs)} are not Kokoro's (tokens or input_ids, style, speed)"
    if len(model.graph.output) != 1:
        return f"expected one output (audio), found {[value.name for value in model.graph.output]}"
    return None


def looks_like_kokoro(path: Path) -> str | None:
    """Why ``path`` is not a usable Kokoro ONNX graph, or ``None`` when it is."""
    model = _load(path)
    return model if isinstance(model, str) else _problem(model)


def _rename_in_graph(graph: onnx.GraphProto, renames: dict[str, str]) -> None:
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.name in renames:
            value.name = renames[value.name]
    for node in graph.node:
        for ports in (node.input, node.output):
            for index, name in enumerate(ports):
                if name in renames:
                    ports[index] = renames[name]
        for attribute in node.attribute:  # subgraphs may use outer-scope names
            if attribute.type == onnx.AttributeProto.GRAPH:
                _rename_in_graph(attribute.g, renames)
            for subgraph in attribute.graphs:
                _rename_in_graph(subgraph, renames)


def normalize_ports(model: onnx.ModelProto) -> bool:
    """Rename another export's ports to ours (``tokens`` in, ``audio`` out); returns whether anything changed."""
    graph = model.graph
    taken = {value.name for value in graph.input} | {value.name for value in graph.output}
    taken |= {tensor.name for tensor in graph.initializer}
    taken |= {name for node in graph.node for name in node.output}
    renames: dict[str, str] = {}
    if "input_ids" in {value.name for value in graph.input} and "tokens" not in taken:
        renames["input_ids"] = "tokens"
    output = graph.output[0].name
    if output != "audio" and "audio" not in taken:
        renames[output] = "audio"
    if not renames:
        return False
    _rename_in_graph(graph, renames)
    return True


def adopt_kokoro_variant(path: Path) -> str | None:
    """Check ``path`` is a Kokoro graph and rewrite its ports to ours in place; the problem, or ``None``."""
    model = _load(path)
    if isinstance(model, str):
        return model
    problem = _problem(model)
    if problem is not None:
        return problem
    if normalize_ports(model):
        onnx.save(model, str(path))
    return None
