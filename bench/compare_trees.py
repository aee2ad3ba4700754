"""The same load against servers built from two source trees, in one run, so they are compared as ratios.

    git worktree add /tmp/old <commit>
    .venv/bin/python -m bench.compare_trees --old /tmp/old --voice af_heart --levels 1,2,3,4,5

Each round starts one tree's server (``python -m voxserve serve`` with that tree's ``src`` first on the
path), runs ``voxserve bench`` over every level, and stops it; rounds alternate the trees (A B B A ...),
so a slow spell of a shared machine falls on both. Only one server runs at a time: they would share the
cores. The server's RSS is read when the load ends and again after ``--settle`` idle seconds, with its
peak (``VmHWM``). Every ``voxserve bench`` run writes its own folder under ``--output``; the tables are
printed as they come and collected in ``summary.txt``.

``--then VOICE:LEVELS[:TRANSPORT[:TOKENS_PER_S]]`` (repeatable) runs more loads on the same server after
the first, before its memory is read: both engines' memory after a load run is

    .venv/bin/python -m bench.compare_trees --old /tmp/old --voice en_US-joe-medium --levels 16 \
        --then af_heart:3 --then af_heart:4:ws:25 --then en_US-joe-medium:8:grpc:25

``--beside VOICE:LEVEL[:TRANSPORT[:TOKENS_PER_S]]`` runs a second load on the same server at the same
time as the first, for as long as the first runs all its levels: one engine's listeners beside
another's, each load's table printed on its own:

    .venv/bin/python -m bench.compare_trees --old /tmp/old --voice af_heart --levels 1 --duration 40 \
        --beside en_US-joe-medium:8

``--hog AT:SECONDS`` takes the cores from the server for a moment of the first load: twice as many
busy processes as the machine has cores start ``AT`` seconds into it and spin for ``SECONDS``. That is
the noisy neighbour a shared machine has; what the loads after it see is what the server learned from
it. A lone listener that runs dry under the hog, then two listeners:

    .venv/bin/python -m bench.compare_trees --old /tmp/old --voice af_heart --levels 1 --duration 20 \
        --hog 3:3 --then af_heart:2
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def prepare_tree(tree: Path) -> None:
    """Generate the tree's gRPC modules if it has none (a fresh ``git worktree`` lacks them: they are
    made at install time): its own ``setup.py`` makes them from its own proto."""
    if not (tree / "src/voxserve/server/grpc_gen").is_dir() and (tree / "setup.py").is_file():
        subprocess.run([sys.executable, "setup.py", "-q", "--version"], cwd=tree, check=True, capture_output=True)


def serve_tree(tree: Path, port: int, env_extra: dict[str, str]) -> subprocess.Popen[bytes]:
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


def metric_sum(port: int, name: str) -> float | None:
    """The sum of a metric's samples, whatever their labels, in the server's /metrics (None: none)."""
    lines = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text.splitlines()
    samples = [float(line.split()[-1]) for line in lines if line.startswith((name + " ", name + "{"))]
    return sum(samples) if samples else None


def _rss_mib(port: int) -> str:
    """The server's resident memory after the load, from its /metrics."""
    rss = metric_sum(port, "process_resident_memory_bytes")
    return "unknown" if rss is None else f"{rss / 2**20:.0f} MiB"


def _learned(port: int) -> str:
    """What admission has learned so far: its limit (from the streams the server saw stall) and the core
    meter's factor."""
    limit, factor = metric_sum(port, "voxserve_admission_limit"), metric_sum(port, "voxserve_core_factor")
    stalled = metric_sum(port, "voxserve_stalled_streams_total")
    return f"(then streams the server saw stall {stalled}, admission limit {limit}, core factor {factor})"


def _peak_mib(server: subprocess.Popen[bytes]) -> str:
    """The server process's peak resident memory (``VmHWM``)."""
    try:
        status = Path(f"/proc/{server.pid}/status").read_text()
    except OSError:
        return "unknown"
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return f"{int(kib) / 1024:.0f} MiB" if kib else "unknown"


def _hog(spec: str) -> threading.Timer:
    """Start (in ``AT`` seconds) busy processes, two per core, that spin for ``SECONDS``: ``AT:SECONDS``."""
    at, seconds = (float(part) for part in spec.split(":"))
    spin = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass"

    def start() -> None:
        hogs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2 * (os.cpu_count() or 1))]
        for hog in hogs:
            hog.wait()

    timer = threading.Timer(at, start)
    timer.start()
    return timer


Load = tuple[str, str, str, float | None]  # voice, levels, transport, tokens per second


def _load(spec: str) -> Load:
    """``VOICE:LEVELS[:TRANSPORT[:TOKENS_PER_S]]``."""
    voice, levels, *rest = spec.split(":")
    return voice, levels, rest[0] if rest else "http", float(rest[1]) if len(rest) > 1 else None


def _loads(args: argparse.Namespace) -> list[Load]:
    """(voice, levels, transport, tokens per second) of each load a round runs, in order."""
    return [(args.voice, args.levels, args.transport, args.incremental)] + [_load(spec) for spec in args.then]


def _bench(args: argparse.Namespace, load: Load, duration: float, out: Path, seed: int) -> list[str]:
    """The ``voxserve bench`` command line of one load."""
    voice, levels, transport, incremental = load
    command = [sys.executable, "-m", "voxserve", "bench", "--url", f"http://127.0.0.1:{args.port}"]
    command += ["--grpc-target", f"127.0.0.1:{args.port + 1}", "--transport", transport]
    command += ["--voice", voice, "--concurrency", levels, "--duration", str(duration)]
    command += ["--output", str(out), "--seed", str(seed), "--text-set", args.text_set]
    return command + (["--incremental", str(incremental)] if incremental else [])


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
    parser.add_argument("--then", action="append", default=[], help="VOICE:LEVELS[:TRANSPORT[:TOKENS_PER_S]]")
    parser.add_argument("--hog", default=None, help="AT:SECONDS: busy processes during the first load")
    parser.add_argument("--beside", default=None, help="VOICE:LEVEL[:TRANSPORT[:TOKENS_PER_S]] with the first load")
    args = parser.parse_args()
    env_extra = dict(item.split("=", 1) for item in args.env)
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    order = [name for r in range(args.rounds) for name in (("old", "new") if r % 2 == 0 else ("new", "old"))]
    args.output.mkdir(parents=True, exist_ok=True)
    for tree in trees.values():
        prepare_tree(tree)
    summary: list[str] = []
    for n, name in enumerate(order):
        server = serve_tree(trees[name], args.port, env_extra)
        try:
            tables, failure = [], ""
            for k, load in enumerate(_loads(args)):
                voice, levels, transport, _ = load
                out = args.output / f"{n:02d}-{name}" / f"{k}-{voice}-{transport}"
                command = _bench(args, load, args.duration, out, n)
                if args.saturation and k == 0:
                    command += ["--saturation", str(args.saturation)]
                hog = _hog(args.hog) if args.hog and k == 0 else None
                beside = None
                if args.beside and k == 0:  # as long as the first load runs its levels
                    side = _load(args.beside)
                    span = args.duration * len(levels.split(","))
                    side_out = args.output / f"{n:02d}-{name}" / f"beside-{side[0]}-{side[2]}"
                    beside = subprocess.Popen(
                        _bench(args, side, span, side_out, n), cwd=ROOT, stdout=subprocess.PIPE, text=True
                    )
                result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
                if hog is not None:
                    hog.cancel()
                if beside is not None:
                    side_table, _ = beside.communicate()
                    tables.append(f"-- beside it, {args.beside}\n" + side_table.strip())
                if result.returncode:
                    failure += f"\n(exit {result.returncode}) {result.stderr.strip()[-400:]}"
                tables.append((f"-- {voice} over {transport}\n" if k else "") + result.stdout.strip())
                tables.append(_learned(args.port))
            rss = _rss_mib(args.port)
            time.sleep(args.settle)
            settled = _rss_mib(args.port)
            head = f"== round {n} tree {name} ({trees[name]}), server RSS after: {rss}"
            head += f", {args.settle:g} s later: {settled}, peak: {_peak_mib(server)}"
            table = head + "\n" + "\n".join(tables) + failure
            print(table, flush=True)
            summary.append(table)
        finally:
            server.terminate()
            server.wait(60)
    (args.output / "summary.txt").write_text("\n\n".join(summary) + "\n")


if __name__ == "__main__":
    main()
