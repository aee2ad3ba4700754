"""Model files: manifest, sources (local dir, package registries, Hugging Face) and the verified cache."""

from __future__ import annotations

from collections.abc import Iterable

from voxserve.models.manifest import InstalledFile, ModelFile, manifest
from voxserve.models.store import FETCH_HINT, ModelStore, fetch_models


def format_listing(files: Iterable[InstalledFile]) -> str:
    """A plain-text table of cache files: name, size in MB, sha256 prefix and status."""
    rows = [("NAME", "SIZE MB", "SHA256", "STATUS", "PATH")]
    for item in files:
        size = f"{item.size / 1e6:.2f}" if item.status != "missing" else "-"
        status = item.status if item.variant is None else f"{item.status} ({item.variant})"
        rows.append((item.name, size, item.sha256[:12] or "-", status, str(item.path)))
    widths = [max(len(row[col]) for row in rows) for col in range(4)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2]), row[3].ljust(widths[3])]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    return "\n".join(lines)


__all__ = ["FETCH_HINT", "InstalledFile", "ModelFile", "ModelStore", "fetch_models", "format_listing", "manifest"]
