"""Split graphs: reproducible builds, and front + decoder == the monolithic model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from pesq import pesq
from pystoi import stoi
from scipy.signal import resample_poly

from voxserve.engines.kokoro_stream import KokoroStreamer
from voxserve.engines.kokoro_vocab import KOKORO_VOCAB
from voxserve.engines.onnx import SessionFactory
from voxserve.engines.piper_stream import PiperStreamer
from voxserve.errors import ModelError
from voxserve.models import ModelStore
from voxserve.models.conv_gemm import measure
from voxserve.models.fileio import sha256_file
from voxserve.models.graphs import KNOWN_HASHES, build_split_graphs
from voxserve.models.split_cache import resolve_precision
from voxserve.types import SplitPrecision

if TYPE_CHECKING:
    from tests.conftest import PiperIds

KOKORO_PHONEMES = "ʃˈʊɹ, ˌI kæn hˈɛlp wɪð ðˈæt."
PIPER_IPA = "ʃˈʊɹ, aɪ kæn hˈɛlp wɪð ðˈæt."


def _session(model: onnx.ModelProto | Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(source, opts, providers=["CPUExecutionProvider"])


def _with_output(path: Path, name: str) -> ort.InferenceSession:
    """The monolithic model with one internal tensor exposed as an extra output."""
    model = onnx.load(str(path))
    model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    return _session(model)


@pytest.fixture(scope="module")
def split_dir(model_store: ModelStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("split")
    build_split_graphs(model_store.kokoro_model(), out)
    build_split_graphs(model_store.piper_model(), out)
    return out


def test_build_is_reproducible_and_matches_known_hashes(
    model_store: ModelStore, split_dir: Path, tmp_path: Path
) -> None:
    again = build_split_graphs(model_store.piper_model(), tmp_path)
    for path in again:
        assert sha256_file(path) == sha256_file(split_dir / path.name)
    for family in ("kokoro", "piper"):
        manifest = json.loads((split_dir / f"{family}_split.json").read_text())
        expected = KNOWN_HASHES[(manifest["source_sha256"], manifest["precision"])]
        assert manifest["files"] == expected
        for name, digest in expected.items():
            assert sha256_file(split_dir / name) == digest


def test_unknown_model_is_refused(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "other",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "other.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(ModelError, match="unrecognized model"):
        build_split_graphs(path, tmp_path / "out")
    with pytest.raises(ModelError, match="missing"):
        build_split_graphs(tmp_path / "absent.onnx", tmp_path / "out")


def test_kokoro_split_reproduces_monolithic(model_store: ModelStore, split_dir: Path) -> None:
    ids = np.array([KOKORO_VOCAB[c] for c in KOKORO_PHONEMES], dtype=np.int64)
    voice = np.fromfile(model_store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)
    style = voice[len(ids)]
    streamer = KokoroStreamer(SessionFactory(["cpu"], 2), split_dir)
    front = streamer.front(ids, style, 1.0)

    mono = _with_output(model_store.kokoro_model(), "/encoder/Clip_output_0")
    audio, durations = mono.run(
        None,
        {
            "tokens": np.concatenate([[0], ids, [0]]).reshape(1, -1),
            "style": style,
            "speed": np.array([1.0], dtype=np.float32),
        },
    )
    np.testing.assert_array_equal(front.durations, durations.reshape(-1).astype(np.int64))
    assert front.frames == int(front.durations.sum())
    whole = streamer.decode(front)
    assert len(whole) == front.frames * 600 == len(audio)
    np.testing.assert_allclose(whole, audio, atol=1e-6)


def test_piper_split_reproduces_monolithic(model_store: ModelStore, split_dir: Path, piper_ids: PiperIds) -> None:
    config = json.loads(model_store.piper_config().read_text())
    ids = piper_ids(PIPER_IPA)
    streamer = PiperStreamer(SessionFactory(["cpu"], 2), split_dir, config["audio"]["sample_rate"])
    front = streamer.front(np.array(ids), noise_scale=0.0, noise_w=0.0)

    mono = _with_output(model_store.piper_model(), "/Ceil_output_0")
    audio, durations = mono.run(
        None,
        {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array([0.0, 1.0, 0.0], dtype=np.float32),
        },
    )
    np.testing.assert_array_equal(front.durations, durations.reshape(-1).astype(np.int64))
    assert front.frames == int(front.durations.sum())
    whole = streamer.decode(front)
    np.testing.assert_allclose(whole, audio.reshape(-1), atol=1e-6)


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_float_decoders_sound_like_int8(
    model_store: ModelStore, split_dir: Path, tmp_path: Path, precision: SplitPrecision
) -> None:
    """The dequantized decoder is a float copy of the int8 one (fp16: its convolutions in float16):
    same inputs, near-identical audio."""
    float_dir = tmp_path / precision
    build_split_graphs(model_store.kokoro_model(), float_dir, precision=precision)
    decoder = onnx.load(str(float_dir / "kokoro_decoder.onnx"))
    ops = {node.op_type for node in decoder.graph.node}
    assert not ops & {"MatMulInteger", "ConvInteger", "DynamicQuantizeLinear"}
    assert all(init.data_type != TensorProto.INT8 for init in decoder.graph.initializer)
    convs = [n for n in decoder.graph.node if n.op_type in ("Conv", "ConvTranspose")]
    weights = {init.name: init.data_type for init in decoder.graph.initializer}
    expected = TensorProto.FLOAT16 if precision == "fp16" else TensorProto.FLOAT
    assert convs and all(weights[n.input[1]] == expected for n in convs)

    ids = np.array([KOKORO_VOCAB[c] for c in KOKORO_PHONEMES], dtype=np.int64)
    voice = np.fromfile(model_store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)
    factory = SessionFactory(["cpu"], 2)
    int8 = KokoroStreamer(factory, split_dir)
    front = int8.front(ids, voice[len(ids)], 1.0)
    reference = int8.decode(front)
    test = KokoroStreamer(factory, float_dir).decode(front)
    ref16, test16 = resample_poly(reference, 2, 3), resample_poly(test, 2, 3)
    assert len(test) == len(reference) and np.isfinite(test).all()
    assert pesq(16_000, ref16, test16, "wb") >= 4.0
    assert stoi(ref16, test16, 16_000) >= 0.98


def test_int8_gemm_decoder_makes_the_int8_audio(model_store: ModelStore, split_dir: Path, tmp_path: Path) -> None:
    """The int8 decoder with its vocoder's convolutions as integer matrix products (models.conv_gemm) is a
    known, reproducible build, and where this CPU computes that form exactly (what ``auto`` checks before
    choosing it) its windows are the int8 decoder's, sample for sample."""
    gemm_dir = tmp_path / "int8-gemm"
    build_split_graphs(model_store.kokoro_model(), gemm_dir, precision="int8-gemm")
    decoder = onnx.load(str(gemm_dir / "kokoro_decoder.onnx"))
    convs = [node.name for node in decoder.graph.node if node.op_type == "ConvInteger"]
    products = [node.name for node in decoder.graph.node if node.op_type == "MatMulInteger"]
    assert convs and not any("/generator/" in name for name in convs)  # the frame-rate ones stay
    assert sum(name.startswith("/voxserve/gemm/") and "/generator/" in name for name in products) == 50
    assert (gemm_dir / "kokoro_stats.onnx").read_bytes() == (split_dir / "kokoro_stats.onnx").read_bytes()

    ids = np.array([KOKORO_VOCAB[c] for c in KOKORO_PHONEMES], dtype=np.int64)
    voice = np.fromfile(model_store.kokoro_voice("af_heart"), dtype=np.float32).reshape(510, 1, 256)
    factory = SessionFactory(["cpu"], 1)
    int8 = KokoroStreamer(factory, split_dir)
    front = int8.front(ids, voice[len(ids)], 1.0)
    reference = np.concatenate([p.samples for p in int8.decode_windows(front, 10, 40)])
    test = np.concatenate([p.samples for p in KokoroStreamer(factory, gemm_dir).decode_windows(front, 10, 40)])
    assert len(test) == len(reference)
    if measure(threads=1).exact:
        np.testing.assert_array_equal(test, reference)
    else:
        assert resolve_precision("auto", on_gpu=False) == "int8"
