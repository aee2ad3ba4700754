"""How far the window costs a fresh server learns from its warm-up are from the ones it learns after.

The runtime's warm-up decodes one short text at every thread level, and the window cost fit
(:class:`voxserve.engines.windowing.WindowCost`) starts from those few windows, the first calls of each
ONNX Runtime session at each size among them. This loads a runtime as
the server does, prints what the fit predicts for a window of ``--window`` audio seconds at each level
and how many windows were ever recorded at one thread, then runs the warm-up again ``--passes`` times
(each learns afresh) and prints the same after each.

    .venv/bin/python -m bench.warmup_fit --engine kokoro --passes 2

Run it several times: every run is a fresh process, as a fresh server is.
"""

from __future__ import annotations

import argparse

from voxserve.engines.cpus import usable_cores
from voxserve.runtime import Runtime
from voxserve.settings import Settings


def _predicted(runtime: Runtime, engine: str, window_s: float) -> str:
    cost = runtime.engines[engine].window_cost
    assert cost is not None, f"{engine} decodes no windows"
    cells = []
    for level in runtime._thread_levels:  # this machine's levels (None: the sessions' own count)
        fit, name = cost.fit(level), f"{level or usable_cores()} thread(s)"
        cells.append(f"{name}: {fit[0] + fit[1] * window_s:.3f} s" if fit else f"{name}: -")
    return ", ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="kokoro")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--window", type=float, default=1.0, help="audio seconds of the window priced")
    args = parser.parse_args()
    runtime = Runtime(Settings(_env_file=None, engines=[args.engine]))
    runtime.load(warm=True)
    cost = runtime.engines[args.engine].window_cost
    assert cost is not None
    print(f"start ({cost.recorded(1)} windows at 1 thread): {_predicted(runtime, args.engine, args.window)}")
    for number in range(1, args.passes + 1):
        runtime.warm_up()
        print(f"pass {number + 1}: {_predicted(runtime, args.engine, args.window)}", flush=True)
    runtime.close()


if __name__ == "__main__":
    main()
