"""The text sets shipped with voxserve (``voxserve/data/texts/<name>.txt``), one sentence or paragraph a line.

Lines starting with ``#`` describe the set. The bench uses ``short``, ``long``, ``zh`` and ``ja``; the
evaluation uses the per-language sets (``short`` doubles as the English one).
"""

from __future__ import annotations

from importlib import resources

from voxserve.errors import InvalidInput

BENCH_SETS = ("short", "long", "zh", "ja")


def available() -> list[str]:
    """Names of every shipped text set."""
    folder = resources.files("voxserve") / "data" / "texts"
    return sorted(entry.name.removesuffix(".txt") for entry in folder.iterdir() if entry.name.endswith(".txt"))


def load(name: str) -> list[str]:
    """The lines of text set ``name``; an unknown name is refused with the list of known ones."""
    if name not in available():
        raise InvalidInput(f"unknown text set {name!r}; choose one of {', '.join(available())}")
    text = (resources.files("voxserve") / "data" / "texts" / f"{name}.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
