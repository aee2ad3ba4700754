"""``<cache>/.verified.json``: sha256 of cache files already hashed, keyed by size and timestamps.

A file whose size, mtime and ctime are unchanged since it was hashed is not hashed again, so checking
the whole cache costs a few dozen ``stat`` calls. The file also remembers accepted variants: a
relpath whose content is a known variant of the manifest's file (see ``hf_source``) maps to the
variant's name and sha256. A read-only cache directory just means nothing is remembered.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from voxserve.models.fileio import write_atomic

log = logging.getLogger(__name__)

FILENAME = ".verified.json"
_VERSION = 1


@dataclass(frozen=True)
class Variant:
    name: str
    sha256: str


def stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class VerifiedCache:
    def __init__(self, root: Path) -> None:
        self.path = root / FILENAME
        self._hashes: dict[str, dict[str, object]] = {}
        self._variants: dict[str, dict[str, str]] = {}
        self._loaded_key: list[int] | None = None
        self._dirty = False

    def _reload_if_changed(self) -> None:
        try:
            key = stat_key(self.path.stat())
        except OSError:
            key = None
        if key == self._loaded_key or self._dirty:
            return
        self._hashes, self._variants = {}, {}
        self._loaded_key = key
        if key is None:
            return
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable %s: %s", self.path, exc)
            return
        if isinstance(data, dict) and data.get("version") == _VERSION:
            self._hashes = dict(data.get("files") or {})
            self._variants = dict(data.get("variants") or {})

    def lookup(self, relpath: str, st: os.stat_result) -> str | None:
        """The remembered sha256 of ``relpath`` if the file is unchanged since it was hashed."""
        self._reload_if_changed()
        entry = self._hashes.get(relpath)
        if entry and entry.get("stat") == stat_key(st):
            sha = entry.get("sha256")
            return sha if isinstance(sha, str) else None
        return None

    def record(self, relpath: str, st: os.stat_result, sha256: str) -> None:
        self._reload_if_changed()
        self._hashes[relpath] = {"stat": stat_key(st), "sha256": sha256}
        self._dirty = True

    def variant(self, relpath: str) -> Variant | None:
        self._reload_if_changed()
        entry = self._variants.get(relpath)
        if entry is None:
            return None
        return Variant(entry.get("name", "?"), entry.get("sha256", ""))

    def set_variant(self, relpath: str, variant: Variant | None) -> None:
        self._reload_if_changed()
        if variant is None:
            self._dirty |= self._variants.pop(relpath, None) is not None
        else:
            self._variants[relpath] = {"name": variant.name, "sha256": variant.sha256}
            self._dirty = True

    def save(self) -> None:
        """Write the file atomically if anything changed; a failure (read-only cache) is only logged."""
        if not self._dirty:
            return
        data = {"version": _VERSION, "files": self._hashes, "variants": self._variants}
        try:
            write_atomic(self.path, json.dumps(data, indent=1, sort_keys=True).encode())
            self._loaded_key = stat_key(self.path.stat())
        except OSError as exc:
            log.info("could not save %s: %s", self.path, exc)
        self._dirty = False
