"""The package's layers import only downwards: engines never reach web code, the stream scheduler never
reaches a transport, and nothing low depends on the servers, the tools or the command line.

Every ``import voxserve.X`` and ``from voxserve.X import ...`` in the sources is read (imports inside
functions included), and each top-level part of the package (a subpackage or a module) may import only
the parts listed before it in :data:`LAYERS`. A part that is not listed fails the test, so a new one
has to be given its place; so does a relative import, which could cross a layer unseen.
"""

from __future__ import annotations

import ast
from pathlib import Path

import voxserve

# Bottom to top. A part may import any part before it, never one after it.
LAYERS = (
    "types",
    "errors",
    "settings",
    "limits",
    "tuning",
    "client",
    "integrations",
    "audio",
    "models",
    "engines",
    "text",
    "stream",
    "routing",
    "policy",
    "piper_voices",
    "runtime",
    "server",
    "benchmark",
    "evaluation",
    "cli_models",
    "cli",
    "__main__",
)
RELATIVE = "(a relative import)"  # not a part: reported as going upwards
ROOT = Path(voxserve.__file__).parent
GENERATED = ROOT / "server" / "grpc_gen"


def _part(path: Path) -> str:
    return path.relative_to(ROOT).with_suffix("").parts[0]


def _imported_parts(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        if isinstance(node, ast.ImportFrom) and node.level:
            found.add(RELATIVE)  # could cross a layer unseen: the package imports by absolute names
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found.update(n.split(".")[1] for n in names if n.startswith("voxserve."))
    return found


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {_part(p) for p in ROOT.rglob("*.py") if p.parent != ROOT or p.name != "__init__.py"}
    assert parts - set(LAYERS) == set(), "give each new module or subpackage its place in LAYERS"


def test_imports_go_only_downwards() -> None:
    rank = {part: i for i, part in enumerate(LAYERS)}
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        if GENERATED in path.parents or (path.parent == ROOT and path.name == "__init__.py"):
            continue
        own = _part(path)
        for other in _imported_parts(path):
            if other != own and rank.get(other, len(LAYERS)) >= rank[own]:
                upward.append(f"{path.relative_to(ROOT)} imports voxserve.{other}")
    assert upward == [], "imports that go upwards:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The reader finds both import forms, inside functions too (so the test above can fail)."""
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from voxserve.server.app import create_app\n\nimport voxserve.web.static\n")
    assert _imported_parts(source) == {"server", "web"}
    source.write_text("from ..engines import base\n")
    assert _imported_parts(source) == {RELATIVE}
