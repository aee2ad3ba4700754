"""A wheel built from the source tree (``pip install .``, the Docker image) holds everything the server
imports and serves: the generated gRPC modules, the playground, the proto and the data files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_wheel_holds_the_generated_grpc_code_and_the_playground(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("grpc_gen", "__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", source / "src", ignore=ignore)  # as a clean clone has it
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", "dist", "."]
    subprocess.run(command, cwd=source, check=True, timeout=300)
    (wheel,) = (source / "dist").glob("voxserve-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "voxserve/server/grpc_gen/voxserve_pb2.py",
        "voxserve/server/grpc_gen/voxserve_pb2_grpc.py",
        "voxserve/server/protos/voxserve.proto",
        "voxserve/web/index.html",
        "voxserve/cli.py",
        "voxserve/data/texts/short.txt",
    ):
        assert needed in names, needed
