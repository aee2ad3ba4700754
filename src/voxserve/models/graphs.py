"""Graph building: split the monolithic Kokoro and Piper ONNX files into streamable parts.

Kokoro (StyleTTS 2 + iSTFTNet) is cut into four graphs:

* ``kokoro_front.onnx``: ``tokens``, ``style``, ``speed`` → ``durations`` (frames per token, float),
  ``prosody_features`` ([1, T, 640], the duration encoder's per-token output) and
  ``content_features`` ([1, 512, T], the text encoder's per-token output). No alignment happens here.
* ``kokoro_prosody.onnx``: ``prosody_features``, ``content_features``, ``alignment`` ([1, T, F], one-hot
  token → frame matrix built by the caller from durations), ``style`` → ``content`` ([1, 512, F]),
  ``f0`` and ``energy`` ([1, 2F]). The caller owns the alignment, so it can cap pad durations or add pauses.
* ``kokoro_stats.onnx``: ``style``, ``content``, ``f0``, ``energy`` → ``stat_out_<k>`` for the decoder's
  frame-rate instance norms (a small part of the decoder's work), run once per sentence.
* ``kokoro_decoder.onnx``: ``style``, ``content``, ``f0``, ``energy``, ``phase0`` ([1, 1, 9]),
  ``mix_frame``, ``mix_vocoder`` ([1]) and ``stat_in_<k>`` → ``audio`` and ``stat_out_<k>``.
  ``phase0`` is added to the harmonic source's cumulative phase (in the graph's own unit: cycles/300), so a
  window can continue the phase of the frames before it. The decoder's 54 instance norms normalize over
  time, so a window alone gets different statistics than the whole sentence; ``stat_in``/``stat_out``
  (see :func:`add_stat_inputs`) let a window use whole-sentence statistics where they are cheap and
  the running means of earlier windows elsewhere. ``phase0 = 0`` and both mixes 0 reproduce the
  monolithic graph exactly. Every input and output has a batch dimension (``audio`` is [B, samples]),
  so windows of several streams with the same number of frames can be decoded in one call
  (:mod:`voxserve.models.batch_graph`, :mod:`voxserve.engines.batching`).

Piper (VITS) is cut into two: ``piper_front.onnx`` (``input``, ``input_lengths``, ``scales`` → ``latent``
[1, 192, F] and ``durations`` [1, 1, P]) and ``piper_decoder.onnx`` (``latent`` → ``audio``).

Subgraphs are extracted by walking back from the wanted outputs to the given inputs; node and initializer
order follow the source, so a build is byte-for-byte reproducible and its hashes are checked against
:data:`KNOWN_HASHES` when the source file is a known one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import onnx
from onnx import TensorProto, helper

from voxserve.errors import ModelError
from voxserve.models.batch_graph import make_batchable
from voxserve.models.conv_gemm import convinteger_as_gemm
from voxserve.models.fileio import sha256_file, write_atomic
from voxserve.models.graph_hashes import KNOWN_HASHES
from voxserve.models.precision import conv1d_as_conv2d, convolutions_fp16, dequantize
from voxserve.models.sealed import SUFFIX as SEALED_SUFFIX
from voxserve.models.sealed import ModelKey, open_sealed, write_sealed
from voxserve.types import SplitPrecision

PRECISIONS: tuple[SplitPrecision, ...] = get_args(SplitPrecision)

# Bumped whenever the built graphs change shape or meaning, so caches built by older code are rebuilt.
SPLIT_FORMAT = 2

_PHASE_ADD = "/voxserve/phase0_add"
_CUMSUM = "/decoder/decoder/generator/m_source/l_sin_gen/CumSum"


@dataclass(frozen=True)
class Port:
    """A graph input or output: its name in the source graph, the name we give it, dtype and shape."""

    source: str
    name: str
    dtype: int
    shape: tuple[str | int, ...]


@dataclass(frozen=True)
class Cut:
    """One subgraph to extract: output file name, its inputs and its outputs."""

    filename: str
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]


F32 = TensorProto.FLOAT
I64 = TensorProto.INT64

KOKORO_CUTS = (
    Cut(
        "kokoro_front.onnx",
        (
            Port("tokens", "tokens", I64, (1, "tokens")),
            Port("style", "style", F32, (1, 256)),
            Port("speed", "speed", F32, (1,)),
        ),
        (
            Port("/encoder/Clip_output_0", "durations", F32, (1, "tokens")),
            Port("/encoder/predictor/text_encoder/Concat_4_output_0", "prosody_features", F32, (1, "tokens", 640)),
            Port("/encoder/text_encoder/Transpose_2_output_0", "content_features", F32, (1, 512, "tokens")),
        ),
    ),
    Cut(
        "kokoro_prosody.onnx",
        (
            Port("/encoder/predictor/text_encoder/Concat_4_output_0", "prosody_features", F32, (1, "tokens", 640)),
            Port("/encoder/text_encoder/Transpose_2_output_0", "content_features", F32, (1, 512, "tokens")),
            Port("/encoder/Cast_4_output_0", "alignment", F32, (1, "tokens", "frames")),
            Port("style", "style", F32, (1, 256)),
        ),
        (
            Port("/encoder/MatMul_1_output_0", "content", F32, (1, 512, "frames")),
            Port("/encoder/Reshape_output_0", "f0", F32, (1, "f0_len")),
            Port("/encoder/Reshape_1_output_0", "energy", F32, (1, "f0_len")),
        ),
    ),
    Cut(
        "kokoro_decoder.onnx",
        (
            Port("style", "style", F32, (1, 256)),
            Port("/encoder/MatMul_1_output_0", "content", F32, (1, 512, "frames")),
            Port("/encoder/Reshape_output_0", "f0", F32, (1, "f0_len")),
            Port("/encoder/Reshape_1_output_0", "energy", F32, (1, "f0_len")),
        ),
        (Port("audio", "audio", F32, ("samples",)),),
    ),
)

PIPER_CUTS = (
    Cut(
        "piper_front.onnx",
        (
            Port("input", "input", I64, (1, "phonemes")),
            Port("input_lengths", "input_lengths", I64, (1,)),
            Port("scales", "scales", F32, (3,)),
        ),
        (
            Port("/Mul_7_output_0", "latent", F32, (1, 192, "frames")),
            Port("/Ceil_output_0", "durations", F32, (1, 1, "phonemes")),
        ),
    ),
    Cut(
        "piper_decoder.onnx",
        (Port("/Mul_7_output_0", "latent", F32, (1, 192, "frames")),),
        (Port("output", "audio", F32, (1, 1, 1, "samples")),),
    ),
)


def extract(model: onnx.ModelProto, cut: Cut) -> onnx.ModelProto:
    """Return the part of ``model`` computing ``cut.outputs`` from ``cut.inputs``, with I/O renamed."""
    graph = model.graph
    producer = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    initializers = {init.name: init for init in graph.initializer}
    input_names = {port.source for port in cut.inputs}
    source_inputs = {vi.name for vi in graph.input}
    keep: set[int] = set()
    needed: set[str] = set()
    stack = [port.source for port in cut.outputs]
    while stack:
        name = stack.pop()
        if name in needed or not name:
            continue
        needed.add(name)
        if name in input_names or name in initializers:
            continue
        if name in source_inputs:
            raise ModelError(f"cannot cut {cut.filename}: it needs graph input {name!r} that the cut does not provide")
        if name not in producer:
            raise ModelError(f"cannot cut {cut.filename}: tensor {name!r} is not produced in the source graph")
        index = producer[name]
        if index not in keep:
            keep.add(index)
            stack.extend(graph.node[index].input)
    rename = {port.source: port.name for port in (*cut.inputs, *cut.outputs)}
    nodes = []
    for i, node in enumerate(graph.node):
        if i not in keep:
            continue
        new = onnx.NodeProto()
        new.CopyFrom(node)
        for j, name in enumerate(new.input):
            if name in rename:
                new.input[j] = rename[name]
        for j, name in enumerate(new.output):
            if name in rename:
                new.output[j] = rename[name]
        nodes.append(new)
    inits = [init for init in graph.initializer if init.name in needed and init.name not in input_names]
    new_graph = helper.make_graph(
        nodes,
        cut.filename.removesuffix(".onnx"),
        [helper.make_tensor_value_info(p.name, p.dtype, list(p.shape)) for p in cut.inputs],
        [helper.make_tensor_value_info(p.name, p.dtype, list(p.shape)) for p in cut.outputs],
        initializer=inits,
    )
    out = helper.make_model(new_graph, opset_imports=list(model.opset_import), producer_name="voxserve-split")
    out.ir_version = model.ir_version
    return out


def add_phase_input(model: onnx.ModelProto) -> onnx.ModelProto:
    """Add a ``phase0`` [1, 1, 9] input to the Kokoro decoder, summed onto the harmonic source's cumsum."""
    graph = model.graph
    index = next((i for i, node in enumerate(graph.node) if node.name == _CUMSUM), None)
    if index is None:
        raise ModelError("the Kokoro decoder graph has no harmonic-source CumSum; is this Kokoro v1.0?")
    cumsum_out = graph.node[index].output[0]
    shifted = cumsum_out + "_shifted"
    for node in graph.node:
        for j, name in enumerate(node.input):
            if name == cumsum_out:
                node.input[j] = shifted
    add = helper.make_node("Add", [cumsum_out, "phase0"], [shifted], name=_PHASE_ADD)
    graph.node.insert(index + 1, add)
    graph.input.append(helper.make_tensor_value_info("phase0", F32, [1, 1, 9]))
    return model


def _is_frame_rate(node: onnx.NodeProto) -> bool:
    """Instance norms of the decoder's encode/decode blocks run at frame rate (cheap); the rest are the vocoder's."""
    return "/generator/" not in node.name


def time_means(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The decoder's ``ReduceMean`` nodes over time (two per instance norm), in graph order."""
    return [node for node in model.graph.node if node.op_type == "ReduceMean"]


def add_stat_inputs(model: onnx.ModelProto) -> None:
    """Let each time-axis mean of the decoder be blended with a statistic given from outside.

    The decoder's 54 instance norms average over time, so a window alone normalizes differently from the
    whole sentence. Mean ``k`` (computed over the window) becomes ``m + (stat_in_<k> - m) * mix`` where
    ``mix`` is input ``mix_frame`` for the frame-rate blocks and ``mix_vocoder`` for the vocoder; the
    window's own means are outputs ``stat_out_<k>``. With both mixes 0 the graph computes exactly what
    it did before; with ``mix_frame = 1`` and whole-sentence statistics from ``kokoro_stats.onnx`` the
    frame-rate blocks normalize as in a whole-sentence decode.
    """
    graph = model.graph
    for mix in ("mix_frame", "mix_vocoder"):
        graph.input.append(helper.make_tensor_value_info(mix, F32, [1]))
    nodes: list[onnx.NodeProto] = []
    count = 0
    for node in graph.node:
        if node.op_type != "ReduceMean":
            nodes.append(node)
            continue
        k = count
        blended = node.output[0]
        own, prior = f"stat_out_{k}", f"stat_in_{k}"
        mix = "mix_frame" if _is_frame_rate(node) else "mix_vocoder"
        node.output[0] = own
        graph.input.append(helper.make_tensor_value_info(prior, F32, [1, f"stat_{k}_channels", 1]))
        graph.output.append(helper.make_tensor_value_info(own, F32, [1, f"stat_{k}_channels", 1]))
        delta, shift = f"/voxserve/stat_{k}_delta", f"/voxserve/stat_{k}_shift"
        nodes += [
            node,
            helper.make_node("Sub", [prior, own], [delta], name=f"/voxserve/stat_{k}_sub"),
            helper.make_node("Mul", [delta, mix], [shift], name=f"/voxserve/stat_{k}_mul"),
            helper.make_node("Add", [own, shift], [blended], name=f"/voxserve/stat_{k}_add"),
        ]
        count += 1
    del graph.node[:]
    graph.node.extend(nodes)


def stats_cut(decoder: onnx.ModelProto) -> Cut:
    """The part of the decoder computing its frame-rate instance-norm means (``stat_out_<k>``)."""
    inputs = tuple(p for p in KOKORO_CUTS[2].inputs)
    renamed = tuple(Port(p.name, p.name, p.dtype, p.shape) for p in inputs)
    outputs = tuple(
        Port(node.output[0], f"stat_out_{k}", F32, (1, f"stat_{k}_channels", 1))
        for k, node in enumerate(time_means(decoder))
        if _is_frame_rate(node)
    )
    return Cut("kokoro_stats.onnx", renamed, outputs)


def _write(model: onnx.ModelProto, path: Path, key: ModelKey | None) -> str:
    """Write ``model`` to ``path`` (sealed next to it when ``key`` is set); returns its plain sha256."""
    data = model.SerializeToString(deterministic=True)
    if key is not None:
        write_sealed(path, data, key)
    else:
        write_atomic(path, data)
    return hashlib.sha256(data).hexdigest()


def detect_family(model: onnx.ModelProto) -> str:
    names = {vi.name for vi in model.graph.input}
    if {"tokens", "style", "speed"} <= names:
        return "kokoro"
    if {"input", "input_lengths", "scales"} <= names:
        return "piper"
    raise ModelError(f"unrecognized model with inputs {sorted(names)}: expected Kokoro v1.0 or a Piper VITS voice")


def build_split_graphs(
    model_path: Path,
    out_dir: Path,
    *,
    precision: SplitPrecision = "int8",
    verify_hashes: bool = True,
    key: ModelKey | None = None,
) -> list[Path]:
    """Cut ``model_path`` (Kokoro or Piper) into streamable graphs in ``out_dir``; return their paths.

    ``precision`` applies to Kokoro's decoder (95 % of the cost): ``int8`` keeps the graph as shipped,
    ``int8-gemm`` runs its vocoder's convolutions as integer matrix products (the same numbers, on kernels some
    CPUs run faster: :mod:`voxserve.models.conv_gemm`), ``fp32`` dequantizes it, ``fp32-conv2d`` also
    rewrites its 1-D convolutions as 2-D, ``fp16`` runs the dequantized convolutions in float16 (see
    :mod:`voxserve.models.precision`). Piper ships in float32 and ignores it. Use one ``out_dir`` per
    precision: file names do not change.

    Writes ``<family>_split.json`` next to them with the source and output sha256. When the source is a
    known file and ``verify_hashes`` is set, each output must match :data:`KNOWN_HASHES` byte for byte.

    With ``key``, ``model_path`` may be sealed (:mod:`voxserve.models.sealed`; decrypted in memory) and
    every graph is written sealed: no plain graph is written. The returned paths are the plain names.
    """
    if not model_path.is_file():
        raise ModelError(f"model file {model_path} is missing; run 'voxserve models fetch'")
    if key is not None and model_path.name.endswith(SEALED_SUFFIX):
        data = open_sealed(model_path, key)
        source_hash = hashlib.sha256(data).hexdigest()
        model = onnx.load_from_string(data)
        del data
    else:
        source_hash = sha256_file(model_path)
        model = onnx.load(str(model_path))
    family = detect_family(model)
    cuts = KOKORO_CUTS if family == "kokoro" else PIPER_CUTS
    if family == "piper":
        precision = "int8"  # nothing to convert; keys the hash table
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    hashes: dict[str, str] = {}
    for cut in cuts:
        parts = [(cut.filename, extract(model, cut))]
        if cut.filename == "kokoro_decoder.onnx":
            decoder = add_phase_input(parts[0][1])
            if precision == "int8-gemm":
                # the vocoder's convolutions only: they run at the audio rate (most of the work), while
                # the frame-rate ones hold two thirds of the weights for a few percent of it, and a
                # rewritten weight is packed again by each thread level's session (engines.onnx)
                decoder = convinteger_as_gemm(decoder, only=lambda node: not _is_frame_rate(node))
            elif precision != "int8":
                decoder = dequantize(decoder)
            if precision == "fp32-conv2d":
                decoder = conv1d_as_conv2d(decoder)
            if precision == "fp16":
                decoder = convolutions_fp16(decoder)
            parts[0] = (cut.filename, decoder)
            stats = stats_cut(decoder)
            parts.insert(0, (stats.filename, extract(decoder, stats)))
            add_stat_inputs(decoder)
            make_batchable(decoder)
        for filename, part in parts:
            path = out_dir / filename
            hashes[filename] = _write(part, path, key)
            paths.append(path)
    expected = KNOWN_HASHES.get((source_hash, precision))
    if verify_hashes and expected is not None:
        wrong = [name for name, digest in hashes.items() if expected.get(name) != digest]
        if wrong:
            raise ModelError(
                f"split graphs {wrong} differ from the known build of this model; "
                "the onnx version may have changed serialization: rebuild with verify_hashes=False and report it"
            )
    manifest = {
        "family": family,
        "format": SPLIT_FORMAT,
        "precision": precision,
        "source": model_path.name.removesuffix(SEALED_SUFFIX),
        "source_sha256": source_hash,
        "files": hashes,
    }
    (out_dir / f"{family}_split.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return paths
