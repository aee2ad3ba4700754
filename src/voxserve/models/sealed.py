"""Model files encrypted at rest ("sealed"): AES-256-GCM, decrypted only in memory.

A sealed file sits where its plain file would, with :data:`SUFFIX` appended
(``kokoro/kokoro-v1.0.int8.onnx`` → ``kokoro/kokoro-v1.0.int8.onnx.vxenc``); the plain file is removed.
Its layout (all integers big-endian)::

    offset  size  field
    0       8     magic  b"VOXSEAL\\x00"
    8       1     format version (1)
    9       8     key id: the first 8 bytes of sha256(b"voxserve model key id" + key)
    17      12    nonce (random, fresh for every file written)
    29      32    sha256 of the plain file
    61      ...   ciphertext, then the 16-byte GCM tag

The whole 61-byte header and the plain file's name are the GCM associated data, so a changed header
byte, a changed ciphertext byte, or a file renamed to stand in for another all fail authentication.
The key id lets a wrong key be told apart from a damaged file without trying to decrypt; the plain
sha256 lets the model store check a sealed file against its manifest without the key.

Only ONNX graphs (the weights) are sealed: the whole models and the split graphs derived from them.
Kokoro's voice style vectors and Piper's JSON config stay plain.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import struct
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from voxserve.errors import ModelError
from voxserve.models.fileio import write_atomic
from voxserve.settings import Settings

SUFFIX = ".vxenc"
MAGIC = b"VOXSEAL\x00"
VERSION = 1
KEY_BYTES = 32
_HEADER = struct.Struct(">8sB8s12s32s")
HEADER_BYTES = _HEADER.size
SEALED_KINDS = (".onnx",)  # plain files that ``seal_tree`` encrypts


@dataclass(frozen=True)
class Header:
    version: int
    key_id: bytes
    nonce: bytes
    plain_sha256: str

    def pack(self) -> bytes:
        return _HEADER.pack(MAGIC, self.version, self.key_id, self.nonce, bytes.fromhex(self.plain_sha256))


@dataclass(frozen=True, repr=False)
class ModelKey:
    """An AES-256 key for sealed model files. Its ``repr`` shows only the key id, never the key."""

    secret: bytes

    def __post_init__(self) -> None:
        if len(self.secret) != KEY_BYTES:
            raise ModelError(f"a model key is {KEY_BYTES} bytes (64 hex characters); got {len(self.secret)} bytes")

    @property
    def key_id(self) -> bytes:
        return hashlib.sha256(b"voxserve model key id" + self.secret).digest()[:8]

    def __repr__(self) -> str:
        return f"ModelKey(id={self.key_id.hex()})"

    @classmethod
    def generate(cls) -> ModelKey:
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def parse(cls, text: str, where: str) -> ModelKey:
        """A key written as 64 hex characters (surrounding whitespace ignored)."""
        try:
            secret = bytes.fromhex(text.strip())
        except ValueError:
            raise ModelError(f"the model key in {where} is not hex (expected 64 hex characters)") from None
        if len(secret) != KEY_BYTES:
            raise ModelError(f"the model key in {where} has {len(secret)} bytes; expected {KEY_BYTES}")
        return cls(secret)

    @classmethod
    def from_file(cls, path: Path) -> ModelKey:
        try:
            text = path.read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f"cannot read the model key file {path}: {exc}") from None
        return cls.parse(text, str(path))

    def write(self, path: Path) -> None:
        """Save as hex to a new file only its owner can read (an existing file is never overwritten)."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(self.secret.hex() + "\n")


def key_from_settings(settings: Settings) -> ModelKey | None:
    """The key the operator set (``model_key_file`` or ``model_key``), or ``None``; both set is refused."""
    if settings.model_key_file is not None and settings.model_key is not None:
        raise ModelError("set one of VOXSERVE_MODEL_KEY_FILE and VOXSERVE_MODEL_KEY, not both")
    if settings.model_key_file is not None:
        return ModelKey.from_file(Path(settings.model_key_file).expanduser())
    if settings.model_key is not None:
        return ModelKey.parse(settings.model_key.get_secret_value(), "VOXSERVE_MODEL_KEY")
    return None


def sealed_path(plain: Path) -> Path:
    return plain.with_name(plain.name + SUFFIX)


def read_header(path: Path) -> Header:
    """The header of sealed file ``path``; :class:`ModelError` when it is not one."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(HEADER_BYTES)
    except OSError as exc:
        raise ModelError(f"cannot read sealed model file {path}: {exc.strerror}") from None
    return _parse_header(raw, path)


def _parse_header(raw: bytes, path: Path) -> Header:
    if len(raw) < HEADER_BYTES or raw[: len(MAGIC)] != MAGIC:
        raise ModelError(f"{path} is not a sealed voxserve model file (bad header)")
    _, version, key_id, nonce, digest = _HEADER.unpack(raw[:HEADER_BYTES])
    if version != VERSION:
        raise ModelError(f"{path} is sealed in format version {version}; this voxserve reads version {VERSION}")
    return Header(version, key_id, nonce, digest.hex())


def _aad(header: bytes, plain_name: str) -> bytes:
    return header + plain_name.encode()


def seal_bytes(data: bytes, key: ModelKey, plain_name: str) -> bytes:
    """The sealed form of ``data``, the plain file named ``plain_name``."""
    header = Header(VERSION, key.key_id, secrets.token_bytes(12), hashlib.sha256(data).hexdigest()).pack()
    return header + AESGCM(key.secret).encrypt(header[17:29], data, _aad(header, plain_name))


def open_sealed(path: Path, key: ModelKey) -> bytes:
    """The plain bytes of sealed file ``path``, in memory only. A wrong key, a changed byte or a renamed
    file is refused with :class:`ModelError` saying which."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read sealed model file {path}: {exc.strerror}") from None
    header = _parse_header(raw, path)
    if header.key_id != key.key_id:
        raise ModelError(
            f"{path} was sealed with another key (key id {header.key_id.hex()}, the configured key is "
            f"{key.key_id.hex()}); set VOXSERVE_MODEL_KEY_FILE or VOXSERVE_MODEL_KEY to the key it was sealed with"
        )
    plain_name = path.name.removesuffix(SUFFIX)
    try:
        data = AESGCM(key.secret).decrypt(header.nonce, raw[HEADER_BYTES:], _aad(raw[:HEADER_BYTES], plain_name))
    except InvalidTag:
        raise ModelError(
            f"{path} failed authentication: it was altered, damaged or renamed since it was sealed; "
            "restore it from the original ('voxserve models fetch', then 'voxserve models encrypt')"
        ) from None
    if hashlib.sha256(data).hexdigest() != header.plain_sha256:  # sealed from a different file than claimed
        raise ModelError(f"{path} decrypts to data whose sha256 does not match its header; restore it")
    return data


def write_sealed(plain: Path, data: bytes, key: ModelKey) -> Path:
    """Write ``data`` (the content of ``plain``) sealed next to where ``plain`` would be; atomic."""
    target = sealed_path(plain)
    write_atomic(target, seal_bytes(data, key, plain.name))
    return target


def seal_tree(root: Path, key: ModelKey) -> list[Path]:
    """Seal every plain ONNX graph under ``root`` and remove the plain file; returns the sealed paths.

    A file already sealed is left as it is (its plain twin, if one reappeared, is sealed again)."""
    sealed = []
    for plain in sorted(p for p in root.rglob("*") if p.suffix in SEALED_KINDS and p.is_file()):
        sealed.append(write_sealed(plain, plain.read_bytes(), key))
        plain.unlink()
    return sealed
