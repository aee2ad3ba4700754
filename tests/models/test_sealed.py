"""Sealed model files (AES-256-GCM at rest): the file layout, and every way a sealed file is refused.

No model is needed: the sealed payloads here are small byte strings and a tiny ONNX graph (run through
the session factory, which must hand ONNX Runtime the decrypted bytes and never a file).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from voxserve.engines.onnx import SessionFactory
from voxserve.errors import ModelError
from voxserve.models.sealed import (
    HEADER_BYTES,
    MAGIC,
    ModelKey,
    key_from_settings,
    open_sealed,
    read_header,
    seal_tree,
    sealed_path,
    write_sealed,
)
from voxserve.models.store import ModelStore
from voxserve.settings import Settings

PAYLOAD = b"weights " * 5000


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(_env_file=None, cache_dir=tmp_path, **overrides)


def test_layout_and_round_trip(tmp_path: Path) -> None:
    key = ModelKey.generate()
    sealed = write_sealed(tmp_path / "model.onnx", PAYLOAD, key)
    assert sealed == tmp_path / "model.onnx.vxenc" and not (tmp_path / "model.onnx").exists()
    raw = sealed.read_bytes()
    assert raw.startswith(MAGIC) and raw[8] == 1  # magic, format version
    assert len(raw) == HEADER_BYTES + len(PAYLOAD) + 16  # header, ciphertext, GCM tag
    assert PAYLOAD[:64] not in raw  # the content is not readable in the file
    header = read_header(sealed)
    assert header.key_id == key.key_id and header.plain_sha256 == hashlib.sha256(PAYLOAD).hexdigest()
    assert open_sealed(sealed, key) == PAYLOAD
    # a fresh nonce per file: sealing the same bytes twice gives different files
    again = write_sealed(tmp_path / "twin.onnx", PAYLOAD, key)
    assert again.read_bytes()[17:29] != raw[17:29]


def test_wrong_key_is_named_as_such(tmp_path: Path) -> None:
    sealed = write_sealed(tmp_path / "model.onnx", PAYLOAD, ModelKey.generate())
    other = ModelKey.generate()
    with pytest.raises(ModelError, match=r"sealed with another key .*configured key is " + other.key_id.hex()):
        open_sealed(sealed, other)


@pytest.mark.parametrize("offset", [20, 40, HEADER_BYTES + 100, -1], ids=["nonce", "sha256", "ciphertext", "tag"])
def test_a_changed_byte_fails_authentication(tmp_path: Path, offset: int) -> None:
    key = ModelKey.generate()
    sealed = write_sealed(tmp_path / "model.onnx", PAYLOAD, key)
    data = bytearray(sealed.read_bytes())
    data[offset] ^= 0x01
    sealed.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="failed authentication: it was altered"):
        open_sealed(sealed, key)


def test_a_renamed_file_fails_authentication(tmp_path: Path) -> None:
    """A sealed graph cannot stand in for another: its plain name is part of what is authenticated."""
    key = ModelKey.generate()
    sealed = write_sealed(tmp_path / "piper_front.onnx", PAYLOAD, key)
    swapped = sealed.rename(tmp_path / "piper_decoder.onnx.vxenc")
    with pytest.raises(ModelError, match="altered, damaged or renamed"):
        open_sealed(swapped, key)


def test_not_a_sealed_file(tmp_path: Path) -> None:
    plain = tmp_path / "model.onnx.vxenc"
    plain.write_bytes(b"\x08\x07" + PAYLOAD)
    with pytest.raises(ModelError, match="not a sealed voxserve model file"):
        read_header(plain)
    (tmp_path / "future.onnx.vxenc").write_bytes(MAGIC + b"\x02" + bytes(60))
    with pytest.raises(ModelError, match="format version 2"):
        read_header(tmp_path / "future.onnx.vxenc")


def test_key_from_file_or_environment(tmp_path: Path) -> None:
    key = ModelKey.generate()
    key.write(tmp_path / "k")
    assert (tmp_path / "k").stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        ModelKey.generate().write(tmp_path / "k")  # a key is never overwritten
    assert key_from_settings(_settings(tmp_path, model_key_file=tmp_path / "k")) == key
    assert key_from_settings(_settings(tmp_path, model_key=key.secret.hex())) == key
    assert key_from_settings(_settings(tmp_path)) is None
    with pytest.raises(ModelError, match="not both"):
        key_from_settings(_settings(tmp_path, model_key_file=tmp_path / "k", model_key=key.secret.hex()))
    with pytest.raises(ModelError, match="has 16 bytes"):
        key_from_settings(_settings(tmp_path, model_key="ab" * 16))
    with pytest.raises(ModelError, match="not hex"):
        key_from_settings(_settings(tmp_path, model_key="z" * 64))
    # neither the key nor the settings show it
    shown = repr(key) + repr(_settings(tmp_path, model_key=key.secret.hex()))
    assert key.secret.hex() not in shown and key.key_id.hex() in shown


def _tiny_graph() -> bytes:
    """y = x + 1 as an ONNX model."""
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    node = helper.make_node("Add", ["x", "one"], ["y"])
    graph = helper.make_graph(
        [node],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [one],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def test_factory_runs_a_sealed_graph_and_refuses_it_without_the_key(tmp_path: Path) -> None:
    key = ModelKey.generate()
    (tmp_path / "tiny.onnx").write_bytes(_tiny_graph())
    assert seal_tree(tmp_path, key) == [sealed_path(tmp_path / "tiny.onnx")]
    assert not (tmp_path / "tiny.onnx").exists()

    store = ModelStore(_settings(tmp_path, model_key=key.secret.hex()))
    factory = SessionFactory(["cpu"], 1, read_sealed=store.read_sealed)
    for path in (tmp_path / "tiny.onnx", sealed_path(tmp_path / "tiny.onnx")):  # the plain name or the sealed one
        session = factory.create(path)
        [y] = session.run(None, {"x": np.array([2.0], dtype=np.float32)})
        assert y.tolist() == [3.0]

    keyless = SessionFactory(["cpu"], 1, read_sealed=ModelStore(_settings(tmp_path)).read_sealed)
    with pytest.raises(ModelError, match="is encrypted; set VOXSERVE_MODEL_KEY_FILE"):
        keyless.create(tmp_path / "tiny.onnx")
    wrong = ModelStore(_settings(tmp_path, model_key=ModelKey.generate().secret.hex()))
    with pytest.raises(ModelError, match="sealed with another key"):
        SessionFactory(["cpu"], 1, read_sealed=wrong.read_sealed).create(tmp_path / "tiny.onnx")
