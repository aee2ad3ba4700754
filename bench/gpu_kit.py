"""What the GPU check needs on a lent GPU machine, packed into parts that one device call each can carry.

The lent machine (an H200) has CUDA 13, PyTorch and a CPU-only onnxruntime, and reaches no registry. A
call carries at most 64 MiB of ignored files, and a warm machine keeps them for the next call. The check
lacks three things there:

* ``onnxruntime-gpu``: PyPI's 1.31.1 (cp312) is built for CUDA 13. Its CUDA provider needs
  ``libcudart.so.13``, ``libcublas(Lt).so.13``, ``libcurand.so.10`` and cuDNN 9, which PyTorch loads.
  The wheel is 256 MB, mostly GPU code for six architectures; ``--keep-sm`` zeroes the code of the
  others (the container layout is unchanged), which leaves ~60 MB once compressed.
* the Kokoro int8 model (92 MB, ~64 MB compressed); the float16 split graphs are built there from it.
* the voice the check speaks with.

``pack`` (here) writes ``.gpu-kit/kit.json`` and ``.gpu-kit/kit.tar.xz.NN``; ``unpack`` (there: stdlib
only) checks every part and extracts them. ``bench/gpu_device.sh`` runs the rest; docs/gpu.md has the
order of calls.

    .venv/bin/python -m bench.gpu_kit pack [--wheel W] [--keep-sm 90]
    python3 -m bench.gpu_kit unpack --dest /tmp/voxserve-kit
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
CUDA_PROVIDER = "onnxruntime/capi/libonnxruntime_providers_cuda.so"
# not needed from Python: the C API library, and TensorRT (not in the image; it would be tried first)
SKIP = ("onnxruntime/capi/libonnxruntime.so", "onnxruntime/capi/libonnxruntime_providers_tensorrt.so")
WHEEL = "onnxruntime-gpu==1.31.1"
PART_BYTES = 60 * 2**20


def _section(data: bytes | bytearray, wanted: str) -> tuple[int, int]:
    """(offset, size) of ELF64 section ``wanted``."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 file")
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    entsize, count, names = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * entsize) for i in range(count)]
    table = headers[names][4]
    for name, _type, _flags, _addr, offset, size in headers:
        end = data.index(b"\0", table + name)
        if data[table + name : end].decode() == wanted:
            return offset, size
    raise ValueError(f"no {wanted} section")


def prune_fatbins(data: bytearray, start: int, end: int, keep_sm: int) -> tuple[int, int]:
    """Zero the payload of every GPU binary in ``data[start:end]`` built for another architecture than
    ``keep_sm`` (PTX is kept: it can be compiled for any). Returns (bytes zeroed, bytes kept)."""
    zeroed = kept = 0
    pos = start
    while pos + 16 <= end:
        magic, _version, header, size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned
            continue
        entry, stop = pos + header, pos + header + size
        while entry < stop:
            kind, _v, entry_header, payload = struct.unpack_from("<HHII", data, entry)
            arch = struct.unpack_from("<I", data, entry + 28)[0]
            body = entry + entry_header
            if kind == 2 and arch != keep_sm:  # 1: PTX, 2: ELF cubin
                data[body : body + payload] = bytes(payload)
                zeroed += payload
            else:
                kept += payload
            entry = body + payload
        pos = stop
    return zeroed, kept


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _add(tar: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(payload), 0o755 if name.endswith(".so") else 0o644
    tar.addfile(info, io.BytesIO(payload))


def build_tar(wheel: Path, model: Path, voice: Path, keep_sm: int | None, tar_path: Path) -> dict[str, int]:
    """The kit's files, uncompressed: ``site/onnxruntime/...``, ``kokoro/<model>``, ``kokoro/voices/<voice>``."""
    pruned = {"zeroed": 0, "kept": 0}
    with zipfile.ZipFile(wheel) as whl, tarfile.open(tar_path, "w") as tar:
        for name in whl.namelist():
            if not name.startswith("onnxruntime/") or name.endswith("/") or name.startswith(SKIP):
                continue
            payload = whl.read(name)
            if name == CUDA_PROVIDER and keep_sm is not None:
                data = bytearray(payload)
                offset, size = _section(data, ".nv_fatbin")
                pruned["zeroed"], pruned["kept"] = prune_fatbins(data, offset, offset + size, keep_sm)
                payload = bytes(data)
            _add(tar, f"site/{name}", payload)
        tar.add(model, f"kokoro/{model.name}")
        tar.add(voice, f"kokoro/voices/{voice.name}")
    return pruned


def compress(src: Path, dst: Path) -> None:
    """xz with every core when the tool is there (~4x faster than one), else Python's lzma."""
    if shutil.which("xz"):
        with dst.open("wb") as out:
            subprocess.run(["xz", "-6", "-T0", "-c", str(src)], stdout=out, check=True)
        return
    with src.open("rb") as f, lzma.open(dst, "wb", preset=6) as out:
        shutil.copyfileobj(f, out, 1 << 20)


def split(archive: Path, out: Path, part_bytes: int) -> list[dict[str, object]]:
    parts: list[dict[str, object]] = []
    with archive.open("rb") as f:
        while block := f.read(part_bytes):
            path = out / f"kit.tar.xz.{len(parts):02d}"
            path.write_bytes(block)
            parts.append({"name": path.name, "bytes": len(block), "sha256": hashlib.sha256(block).hexdigest()})
    return parts


def pack(
    wheel: Path, model: Path, voice: Path, out: Path, keep_sm: int | None = 90, part_bytes: int = PART_BYTES
) -> dict[str, object]:
    """Write the kit's parts and ``kit.json`` (returned) into ``out``, replacing an earlier kit."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("kit.*"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        tar_path, archive = Path(tmp) / "kit.tar", Path(tmp) / "kit.tar.xz"
        pruned = build_tar(wheel, model, voice, keep_sm, tar_path)
        compress(tar_path, archive)
        parts = split(archive, out, part_bytes)
    manifest: dict[str, object] = {"wheel": wheel.name, "keep_sm": keep_sm, "pruned": pruned, "parts": parts}
    (out / "kit.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _download_wheel(into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "--only-binary=:all:", "-q"]
    cmd += ["--python-version", "3.12", "--platform", "manylinux_2_28_x86_64", "-d", str(into)]
    subprocess.run(cmd, check=True)
    return next(into.glob("onnxruntime_gpu-*.whl"))


def unpack(kit: Path, dest: Path) -> list[str]:
    """Check every part of ``kit`` and extract them into ``dest``; returns the names of missing or bad
    parts (nothing is extracted then)."""
    manifest = json.loads((kit / "kit.json").read_text())
    bad = [
        part["name"]
        for part in manifest["parts"]
        if not (kit / part["name"]).is_file() or _digest(kit / part["name"]) != part["sha256"]
    ]
    if bad:
        return bad
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as joined:
        for part in manifest["parts"]:
            with (kit / part["name"]).open("rb") as f:
                shutil.copyfileobj(f, joined, 1 << 20)
        joined.seek(0)
        with lzma.open(joined) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            tar.extractall(dest, filter="data")
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    cache = Path.home() / ".cache" / "voxserve" / "kokoro"
    p = sub.add_parser("pack", help="build the parts (here)")
    p.add_argument("--wheel", type=Path, help=f"the onnxruntime-gpu wheel (default: pip download {WHEEL})")
    p.add_argument("--model", type=Path, default=cache / "kokoro-v1.0.int8.onnx")
    p.add_argument("--voices", type=Path, default=cache / "voices")
    p.add_argument("--voice", default="af_heart")
    p.add_argument("--keep-sm", type=int, default=90, help="GPU architecture to keep (H200: 90); -1 keeps all")
    p.add_argument("--part-mib", type=int, default=PART_BYTES // 2**20)
    p.add_argument("--out", type=Path, default=Path(".gpu-kit"))
    u = sub.add_parser("unpack", help="check and extract the parts (on the GPU machine)")
    u.add_argument("--kit", type=Path, default=Path(".gpu-kit"))
    u.add_argument("--dest", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "pack":
        with tempfile.TemporaryDirectory() as tmp:
            wheel = args.wheel or _download_wheel(Path(tmp))
            keep = None if args.keep_sm < 0 else args.keep_sm
            manifest = pack(wheel, args.model, args.voices / f"{args.voice}.bin", args.out, keep, args.part_mib << 20)
        print(json.dumps(manifest, indent=2))
        names = " or ".join(f".gpu-kit/{part['name']}" for part in manifest["parts"])  # type: ignore[attr-defined]
        print(f"carry per call: .gpu-kit/kit.json and one of {names} (docs/gpu.md)", file=sys.stderr)
        return
    missing = unpack(args.kit, args.dest)
    if missing:
        sys.exit(f"kit parts missing or damaged: {', '.join(missing)}; carry them (one per call) and rerun")
    print(f"kit unpacked in {args.dest}")


if __name__ == "__main__":
    main()
