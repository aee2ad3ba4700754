"""The GPU kit (bench/gpu_kit.py): GPU code of other architectures is zeroed and nothing else; the parts
fit a device call, come back whole, and a damaged or missing part is named (docs/gpu.md).

The real wheel is 256 MB and GPU-only, so the ELF and the wheel here are small ones built to the same
layout: ELF64 section headers, fatbin containers of cubin entries with the architecture at offset 28."""

from __future__ import annotations

import random
import struct
import zipfile
from pathlib import Path

import pytest

from bench import gpu_kit

ENTRY_HEADER = 64


def fatbin(entries: list[tuple[int, int, bytes]]) -> bytes:
    """One fatbin container of (kind, sm, payload) entries."""
    body = b""
    for kind, sm, payload in entries:
        header = struct.pack("<HHII", kind, 0x101, ENTRY_HEADER, len(payload)).ljust(28, b"\0")
        header = (header + struct.pack("<I", sm)).ljust(ENTRY_HEADER, b"\0")
        body += header + payload
    return struct.pack("<IHHQ", gpu_kit.FATBIN_MAGIC, 1, 16, len(body)) + body


def elf_with(section: bytes) -> bytes:
    """A minimal ELF64 file whose sections are null, .nv_fatbin and .shstrtab."""
    names = b"\0.nv_fatbin\0.shstrtab\0"
    data_at = 64
    names_at = data_at + len(section)
    shoff = names_at + len(names)
    header = bytearray(b"\x7fELF\x02\x01\x01".ljust(64, b"\0"))
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, 3, 2)
    sections = bytes(64)
    sections += struct.pack("<IIQQQQ", 1, 1, 0, 0, data_at, len(section)).ljust(64, b"\0")
    sections += struct.pack("<IIQQQQ", 12, 3, 0, 0, names_at, len(names)).ljust(64, b"\0")
    return bytes(header) + section + names + sections


def test_other_architectures_are_zeroed_in_place() -> None:
    keep, other, ptx = b"\x90" * 40, b"\x80" * 24, b".version 8.0" * 2
    section = fatbin([(2, 80, other), (2, 90, keep), (1, 80, ptx)]) + bytes(8) + fatbin([(2, 120, other)])
    data = bytearray(elf_with(section))
    offset, size = gpu_kit._section(data, ".nv_fatbin")
    assert data[offset : offset + size] == section
    zeroed, kept = gpu_kit.prune_fatbins(data, offset, offset + size, keep_sm=90)
    assert (zeroed, kept) == (2 * len(other), len(keep) + len(ptx))
    assert len(data) == len(elf_with(section))  # the layout is unchanged
    pruned = bytes(data[offset : offset + size])
    assert keep in pruned and ptx in pruned and other not in pruned
    with pytest.raises(ValueError, match=r"no \.text section"):
        gpu_kit._section(data, ".text")


def test_pack_and_unpack_round_trip(tmp_path: Path) -> None:
    wheel = tmp_path / "onnxruntime_gpu-0-cp312-cp312-manylinux_2_28_x86_64.whl"
    payloads = {
        "onnxruntime/__init__.py": b"VERSION = 'test'\n",
        "onnxruntime/capi/libonnxruntime_providers_cuda.so": elf_with(
            fatbin([(2, 90, b"\x90" * 99), (2, 75, b"x" * 50)])
        ),
        "onnxruntime/capi/libonnxruntime.so.1.31.1": b"C API, not needed",
        "onnxruntime_gpu-0.dist-info/METADATA": b"Name: onnxruntime-gpu",
    }
    with zipfile.ZipFile(wheel, "w") as whl:
        for name, payload in payloads.items():
            whl.writestr(name, payload)
    model, voice = tmp_path / "kokoro-v1.0.int8.onnx", tmp_path / "af_heart.bin"
    model.write_bytes(random.Random(4).randbytes(20_000))  # incompressible, like int8 weights
    voice.write_bytes(b"\x01" * 5000)
    kit = tmp_path / "kit"
    manifest = gpu_kit.pack(wheel, model, voice, kit, keep_sm=90, part_bytes=4096)
    parts = manifest["parts"]
    assert isinstance(parts, list) and len(parts) > 1
    assert all(part["bytes"] <= 4096 for part in parts)
    assert manifest["pruned"] == {"zeroed": 50, "kept": 99}

    dest = tmp_path / "there"
    assert gpu_kit.unpack(kit, dest) == []
    site = dest / "site" / "onnxruntime"
    assert (site / "__init__.py").read_bytes() == payloads["onnxruntime/__init__.py"]
    cuda = (site / "capi" / "libonnxruntime_providers_cuda.so").read_bytes()
    assert b"\x90" * 99 in cuda and b"x" * 50 not in cuda
    assert not (site / "capi" / "libonnxruntime.so.1.31.1").exists()
    assert not (dest / "site" / "onnxruntime_gpu-0.dist-info").exists()
    assert (dest / "kokoro" / model.name).read_bytes() == model.read_bytes()
    assert (dest / "kokoro" / "voices" / voice.name).read_bytes() == voice.read_bytes()

    first, last = kit / parts[0]["name"], kit / parts[-1]["name"]
    first.write_bytes(b"damaged")
    last.unlink()
    assert gpu_kit.unpack(kit, tmp_path / "again") == [parts[0]["name"], parts[-1]["name"]]
    assert not (tmp_path / "again").exists()
