"""The model cache: where each file lives, whether it is intact, and how to fill it.

The engines only call the accessors (``kokoro_model()``, ``kokoro_voice(name)``, ``piper_model()``, ...),
which return a verified path or raise :class:`ModelError` telling the user what to run.
``fetch()`` fills the cache from the configured sources, verifying every sha256 before an atomic
move into place, then runs the registered ``builders`` (derived files such as split graphs).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from voxserve.errors import ModelError, UnknownVoice
from voxserve.models.fileio import sha256_file
from voxserve.models.manifest import (
    KOKORO_MODEL,
    KOKORO_VOICE_NAMES,
    KOKORO_VOICES,
    KOKORO_VOICES_DIR,
    PIPER_CONFIG,
    PIPER_MODEL,
    InstalledFile,
    ModelFile,
    is_valid_voice_name,
    kokoro_voice_file,
    manifest,
)
from voxserve.models.sealed import SUFFIX as SEALED_SUFFIX
from voxserve.models.sealed import ModelKey, key_from_settings, open_sealed, read_header, sealed_path
from voxserve.models.source_base import Source, StagedFile
from voxserve.models.sources import make_sources
from voxserve.models.verified import Variant, VerifiedCache
from voxserve.settings import Settings

log = logging.getLogger(__name__)

FETCH_HINT = "run 'voxserve models fetch'"
STAGING_PREFIX = ".staging-"
STALE_STAGING_S = 6 * 3600

Builder = Callable[["ModelStore"], list[InstalledFile]]


@dataclass(frozen=True)
class _Check:
    item: ModelFile
    path: Path
    status: str  # ok | missing | corrupt
    size: int = 0
    sha256: str = ""
    detail: str = ""
    variant: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def installed(self) -> InstalledFile:
        return InstalledFile(self.item.name, self.path, self.size, self.sha256, self.ok, self.status, self.variant)

    def problem(self) -> str:
        return f"{self.status}: {self.path}{' (' + self.detail + ')' if self.detail else ''}"


class ModelStore:
    """The cache under ``settings.cache_dir``. ``sources`` and ``builders`` may be replaced or extended."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root: Path = Path(settings.cache_dir).expanduser()
        self.sources: list[Source] = make_sources(settings)
        self.builders: list[Builder] = []
        self._verified = VerifiedCache(self.root)
        self._key: ModelKey | None = None
        self._authenticated: set[tuple[Path, int, int]] = set()

    # --- sealed (encrypted) files: see voxserve.models.sealed ---------------------------------------

    @property
    def key(self) -> ModelKey | None:
        """The operator's model key (read once, when first needed), or ``None`` when none is set."""
        if self._key is None:
            self._key = key_from_settings(self.settings)
        return self._key

    def read_sealed(self, path: Path) -> bytes | None:
        """The plain bytes of a sealed graph, decrypted in memory: ``path`` is the sealed file, or a plain
        path whose file is absent but sealed. ``None`` when ``path`` is an ordinary file (read it)."""
        sealed = path if path.name.endswith(SEALED_SUFFIX) else sealed_path(path)
        if sealed is not path and (path.exists() or not sealed.is_file()):
            return None
        key = self.key
        if key is None:
            raise ModelError(
                f"model file {sealed} is encrypted; set VOXSERVE_MODEL_KEY_FILE (or VOXSERVE_MODEL_KEY) to its key"
            )
        return open_sealed(sealed, key)

    # --- accessors used by the engines -------------------------------------------------------------

    def kokoro_model(self) -> Path:
        return self._require(KOKORO_MODEL)

    def kokoro_voices_dir(self) -> Path:
        """The voices directory, after checking that every manifest voice in it is intact."""
        checks = self._check_all(KOKORO_VOICES)
        bad = [check for check in checks if not check.ok]
        if bad:
            listed = "; ".join(check.problem() for check in bad[:5])
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            raise ModelError(f"Kokoro voice files are not usable: {listed}{more}. To repair, {FETCH_HINT}.")
        return self.root / KOKORO_VOICES_DIR

    def kokoro_voice(self, name: str) -> Path:
        """A voice file by name (file stem). Voices outside the manifest are allowed if present (unverified)."""
        if name in KOKORO_VOICE_NAMES:
            return self._require(kokoro_voice_file(name))
        path = self.root / KOKORO_VOICES_DIR / f"{name}.bin"
        if is_valid_voice_name(name) and path.is_file():
            return path
        raise UnknownVoice(f"unknown Kokoro voice {name!r}; known voices: {', '.join(KOKORO_VOICE_NAMES)}")

    def piper_model(self) -> Path:
        return self._require(PIPER_MODEL)

    def piper_config(self) -> Path:
        return self._require(PIPER_CONFIG)

    # --- inspection ----------------------------------------------------------------------------------

    def installed(self) -> list[InstalledFile]:
        """Every manifest file (all engines) as found on disk, for ``voxserve models list``."""
        return [check.installed() for check in self._check_all(manifest())]

    def verify(self, engines: list[str] | None = None) -> list[str]:
        """Problems with the files of ``engines`` (default ``settings.engines``); empty when all is well."""
        files = manifest(engines if engines is not None else list(self.settings.engines))
        return [check.problem() for check in self._check_all(files) if not check.ok]

    # --- fetching ------------------------------------------------------------------------------------

    def fetch(
        self, *, force: bool = False, engines: list[str] | None = None, progress: bool = True
    ) -> list[InstalledFile]:
        """Install missing or corrupt files (all of them with ``force``); returns the files installed now.

        Sources are tried in ``settings.model_sources`` order; a file a source lacks or gets wrong is
        asked of the next one. Raises ModelError listing every source's reason if a file stays missing.
        The builders run afterwards and their files are appended to the result.
        """
        files = manifest(engines if engines is not None else list(self.settings.engines))
        needed = list(files) if force else [check.item for check in self._check_all(files) if not check.ok]
        installed: list[InstalledFile] = []
        if needed:
            installed = self._fetch_from_sources(needed, progress=progress)
        for build in self.builders:
            installed.extend(build(self))
        return installed

    def _fetch_from_sources(self, needed: list[ModelFile], *, progress: bool) -> list[InstalledFile]:
        reasons: dict[str, list[str]] = {item.relpath: [] for item in needed}
        installed: list[InstalledFile] = []
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._remove_stale_staging()
            staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.root))
        except OSError as exc:
            raise ModelError(f"cannot write to the model cache {self.root}: {exc}; set VOXSERVE_CACHE_DIR") from exc
        try:
            for source in self.sources:
                if not needed:
                    break
                log.info("asking %s for %d file(s)", source.name, len(needed))
                try:
                    result = source.provide(needed, staging, progress=progress)
                except ModelError as exc:
                    for item in needed:
                        reasons[item.relpath].append(f"{source.name}: {exc.message}")
                    continue
                remaining = []
                for item in needed:
                    staged = result.staged.get(item.relpath)
                    problem = result.problems.get(item.relpath, "not provided")
                    if staged is not None:
                        rejected = self._accept(item, staged)
                        if rejected is None:
                            installed.append(self._check(item).installed())
                            continue
                        problem = rejected
                    reasons[item.relpath].append(f"{source.name}: {problem}")
                    remaining.append(item)
                needed = remaining
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            self._verified.save()
        if needed:
            raise ModelError(self._failure_message(needed, reasons))
        return installed

    def _remove_stale_staging(self) -> None:
        """Drop staging folders left by a fetch that was killed (old enough not to be a running one)."""
        cutoff = time.time() - STALE_STAGING_S
        for folder in self.root.glob(STAGING_PREFIX + "*"):
            if folder.is_dir() and folder.stat().st_mtime < cutoff:
                shutil.rmtree(folder, ignore_errors=True)

    def _accept(self, item: ModelFile, staged: StagedFile) -> str | None:
        """Move a staged file into place if its hash is right; otherwise say why not."""
        if staged.variant is None and staged.sha256 != item.sha256:
            return f"sha256 mismatch (got {staged.sha256[:16]}…, expected {item.sha256[:16]}…, {staged.size} bytes)"
        target = self.root / item.relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staged.path, target)
        self._verified.record(item.relpath, target.stat(), staged.sha256)
        is_variant = staged.variant is not None and staged.sha256 != item.sha256
        variant = Variant(staged.variant or "", staged.sha256) if is_variant else None
        self._verified.set_variant(item.relpath, variant)
        return None

    def _failure_message(self, missing: list[ModelFile], reasons: dict[str, list[str]]) -> str:
        if not self.sources:
            return f"no model sources are configured (model_sources={self.settings.model_sources}, MODEL_PATH unset)"
        lines = [f"could not fetch {len(missing)} model file(s) from {[s.name for s in self.sources]}:"]
        for item in missing[:8]:
            lines.append(f"  {item.relpath}: " + "; ".join(reasons[item.relpath]))
        if len(missing) > 8:
            lines.append(f"  ... and {len(missing) - 8} more")
        lines.append("Set MODEL_PATH to a directory holding the files, or check network access to the registries.")
        return "\n".join(lines)

    # --- checking ------------------------------------------------------------------------------------

    def _require(self, item: ModelFile) -> Path:
        check = self._check(item)
        self._verified.save()
        if check.status == "missing":
            raise ModelError(f"model file {check.path} is missing; {FETCH_HINT} to download it.")
        if not check.ok:
            raise ModelError(f"model file {check.path} is corrupt ({check.detail}); {FETCH_HINT} to repair it.")
        if check.path.name.endswith(SEALED_SUFFIX):
            self._authenticate(check.path)
        return check.path

    def _authenticate(self, sealed: Path) -> None:
        """Decrypt ``sealed`` once (in memory, then dropped) so that a wrong key or an altered file is
        refused when the engine loads, even where the graph itself is only loaded on first use."""
        st = sealed.stat()
        stamp = (sealed, st.st_size, st.st_mtime_ns)
        if stamp not in self._authenticated:
            self.read_sealed(sealed)
            self._authenticated.add(stamp)

    def _check_all(self, files: tuple[ModelFile, ...] | list[ModelFile]) -> list[_Check]:
        checks = [self._check(item) for item in files]
        self._verified.save()
        return checks

    def _check(self, item: ModelFile) -> _Check:
        path = self.root / item.relpath
        try:
            st = path.stat()
        except (FileNotFoundError, NotADirectoryError):
            return (
                self._check_sealed(item, sealed_path(path))
                if sealed_path(path).is_file()
                else _Check(item, path, "missing")
            )
        except OSError as exc:
            return _Check(item, path, "corrupt", detail=f"unreadable: {exc.strerror}")
        if not path.is_file():
            return _Check(item, path, "corrupt", detail="not a regular file")
        variant = self._verified.variant(item.relpath)
        if variant is None and item.size is not None and st.st_size != item.size:
            detail = f"{st.st_size} bytes, expected {item.size}"
            return _Check(item, path, "corrupt", size=st.st_size, detail=detail)
        sha = self._verified.lookup(item.relpath, st)
        if sha is None:
            try:
                sha = sha256_file(path)
            except OSError as exc:
                return _Check(item, path, "corrupt", size=st.st_size, detail=f"unreadable: {exc.strerror}")
            self._verified.record(item.relpath, st, sha)
        if sha == item.sha256:
            return _Check(item, path, "ok", st.st_size, sha)
        if variant is not None and sha == variant.sha256:
            return _Check(item, path, "ok", st.st_size, sha, variant=variant.name)
        detail = f"sha256 {sha[:16]}…, expected {item.sha256[:16]}…"
        return _Check(item, path, "corrupt", st.st_size, sha, detail)

    def _check_sealed(self, item: ModelFile, sealed: Path) -> _Check:
        """A sealed file against the manifest, by the plain sha256 in its header (no key needed; its
        content is authenticated when it is decrypted at load)."""
        try:
            header = read_header(sealed)
        except ModelError as exc:
            return _Check(item, sealed, "corrupt", detail=exc.message)
        size = sealed.stat().st_size
        variant = self._verified.variant(item.relpath)
        if header.plain_sha256 == item.sha256:
            return _Check(item, sealed, "ok", size, header.plain_sha256, variant="sealed")
        if variant is not None and header.plain_sha256 == variant.sha256:
            return _Check(item, sealed, "ok", size, header.plain_sha256, variant=f"{variant.name}, sealed")
        detail = f"sealed; sha256 {header.plain_sha256[:16]}…, expected {item.sha256[:16]}…"
        return _Check(item, sealed, "corrupt", size, header.plain_sha256, detail)


def fetch_models(
    settings: Settings, *, force: bool = False, engines: list[str] | None = None, progress: bool = True
) -> list[InstalledFile]:
    """Convenience for ``ModelStore(settings).fetch(...)``."""
    return ModelStore(settings).fetch(force=force, engines=engines, progress=progress)
