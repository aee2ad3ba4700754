"""What loading each split graph costs in resident memory, at one thread count and at every elastic level.

Each load runs in a fresh interpreter (a process's RSS depends on everything it did before), after ONNX
Runtime's own start-up is paid with a tiny graph, and is measured after glibc has returned freed heap
memory (``malloc_trim``), so the figure is what the sessions keep. Run it in two source trees to compare
them (``PYTHONPATH=<tree>/src``).

    .venv/bin/python -m bench.graph_memory [--threads 2,16]

Prints one line per graph and thread count: MB for one session at the widest count, MB for the elastic
session (every level of :func:`voxserve.engines.onnx.thread_levels`), and the extra levels' share.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from voxserve.models.split_cache import ensure_split_graphs
from voxserve.models.store import ModelStore
from voxserve.settings import Settings

LOAD = """
import ctypes, sys
import onnxruntime as ort
from onnx import TensorProto, helper
from voxserve.engines.onnx import SessionFactory
def rss():
    ctypes.CDLL(None).malloc_trim(0)
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
x, y = (helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in "xy")
tiny = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny", [x], [y]))
ort.InferenceSession(tiny.SerializeToString(), providers=["CPUExecutionProvider"])
factory = SessionFactory(["cpu"], int(sys.argv[2]), elastic=sys.argv[3] == "elastic")
before = rss()
source = open(sys.argv[1], "rb").read() if sys.argv[3] == "bytes" else sys.argv[1]  # as a sealed model's
session = factory.create(source)
del source
print(rss() - before)
"""


def load_mb(graph: str, threads: int, mode: str) -> float:
    """RSS in MB that loading ``graph`` adds in a fresh interpreter (``mode``: single, elastic, or bytes: one
    level from the file's bytes, as a sealed model is loaded)."""
    command = [sys.executable, "-c", LOAD, graph, str(threads), mode]
    return float(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", default="2,16", help="intra-op thread counts to load at")
    args = parser.parse_args()
    store = ModelStore(Settings(_env_file=None))
    graphs = sorted(p for family in ("kokoro", "piper") for p in ensure_split_graphs(store, family).glob("*.onnx"))
    total: dict[int, list[float]] = {}
    for threads in (int(t) for t in args.threads.split(",")):
        for graph in graphs:
            one, all_levels = load_mb(str(graph), threads, "single"), load_mb(str(graph), threads, "elastic")
            total.setdefault(threads, [0.0, 0.0])
            total[threads][0] += one
            total[threads][1] += all_levels
            print(f"{graph.stem:16s} threads {threads:2d}: one level {one:6.1f} MB, elastic {all_levels:6.1f} MB")
    for threads, (one, all_levels) in total.items():
        print(f"all graphs       threads {threads:2d}: one level {one:6.1f} MB, elastic {all_levels:6.1f} MB")


if __name__ == "__main__":
    main()
