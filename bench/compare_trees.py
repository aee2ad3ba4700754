"""The same load against servers built from two source trees, in one run, so they are compared as ratios.

    git worktree add /tmp/old <commit>
    .venv/bin/python -m bench.compare_trees --old /tmp/old --voice af_heart --levels 1,2,3,4,5

Each round starts one tree's server (``python -m voxserve serve`` with that tree's ``src`` first on the
path), runs ``voxserve bench`` over every level, and stops it; rounds alternate the trees (A B B A ...),
so a slow spell of a shared machine falls on both. Only one server runs at a time: they would share the
cores. The server's RSS is read when the load ends and again after ``--settle`` idle seconds. Every
``voxserve bench`` run writes its own folder under ``--output``; the tables are printed as
they come and collected in ``summary.txt``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def _prepare(tree: Path) -> None:
    """Generate the tree's gRPC modules if it has none (a fresh ``git worktree`` lacks them: they are
    made at install time): its own ``setup.py`` makes them from its own proto."""
    if not (tree / "src/voxserve/server/grpc_gen").is_dir() and (tree / "setup.py").is_file():
        subprocess.run([sys.executable, "setup.py", "-q", "--version"], cwd=tree, check=True, capture_output=True)


def _serve(tree: Path, port: int, env_extra: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), **env_extra}
    command = [sys.executable, "-m", "voxserve", "-q", "serve", "--port", str(port), "--grpc-port", str(port + 1)]
    server = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server from {tree} exited with {server.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).json().get("status") not in (None, "loading"):
                return server
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    server.kill()
    raise RuntimeError(f"the server from {tree} was not ready in 600 s")


def _rss_mib(port: int) -> str:
    """The server's resident memory after the load, from its /metrics."""
    for line in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text.splitlines():
        if line.startswith("process_resident_memory_bytes "):
            return f"{float(line.split()[1]) / 2**20:.0f} MiB"
    return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="the other source tree (a git worktree)")
    parser.add_argument("--new", type=Path, default=ROOT, help="this tree by default")
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--transport", default="http")
    parser.add_argument("--levels", default="1,2,3,4,5")
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--incremental", type=float, default=None, help="tokens per second (ws, grpc)")
    parser.add_argument("--saturation", type=int, default=None, help="unpaced listeners measured first (bench)")
    parser.add_argument("--text-set", dest="text_set", default="short", help="the bench's texts (short, long, ...)")
    parser.add_argument("--port", type=int, default=18600)
    parser.add_argument("--output", type=Path, default=ROOT / "bench/results/compare_trees")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for both servers")
    parser.add_argument("--settle", type=float, default=10.0, help="seconds idle before RSS is read again")
    args = parser.parse_args()
    env_extra = dict(item.split("=", 1) for item in args.env)
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    order = [name for r in range(args.rounds) for name in (("old", "new") if r % 2 == 0 else ("new", "old"))]
    args.output.mkdir(parents=True, exist_ok=True)
    for tree in trees.values():
        _prepare(tree)
    summary: list[str] = []
    for n, name in enumerate(order):
        server = _serve(trees[name], args.port, env_extra)
        try:
            out = args.output / f"{n:02d}-{name}"
            command = [sys.executable, "-m", "voxserve", "bench", "--url", f"http://127.0.0.1:{args.port}"]
            command += ["--grpc-target", f"127.0.0.1:{args.port + 1}", "--transport", args.transport]
            command += ["--voice", args.voice, "--concurrency", args.levels, "--duration", str(args.duration)]
            command += ["--output", str(out), "--seed", str(n), "--text-set", args.text_set]
            if args.incremental:
                command += ["--incremental", str(args.incremental)]
            if args.saturation:
                command += ["--saturation", str(args.saturation)]
            result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            failure = f"\n(exit {result.returncode}) {result.stderr.strip()[-400:]}" if result.returncode else ""
            rss = _rss_mib(args.port)
            time.sleep(args.settle)
            settled = _rss_mib(args.port)
            head = f"== round {n} tree {name} ({trees[name]}), server RSS after: {rss}"
            head += f", {args.settle:g} s later: {settled}"
            table = f"{head}\n{result.stdout.strip()}{failure}"
            print(table, flush=True)
            summary.append(table)
        finally:
            server.terminate()
            server.wait(60)
    (args.output / "summary.txt").write_text("\n\n".join(summary) + "\n")


if __name__ == "__main__":
    main()
