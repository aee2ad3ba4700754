"""What the first listener of a freshly started server hears, and what the pool's jobs did for it.

Starts a server in this process (default settings but the rate limit), runs ``voxserve bench`` with one
playing listener for ``--duration`` seconds, and prints its table, each request's stalls (seconds, and
where in its audio), and the first ``--jobs`` pool jobs in order: whether each was a first audio, its
expected cost, how long after it was submitted its result was due, how long it waited for a core and
how long it worked. One server per process, so that every run starts cold; repeat it with a shell loop,
and point ``PYTHONPATH`` at another tree's ``src`` to run that tree:

    for i in 1 2 3 4; do .venv/bin/python -m bench.first_stream; done
    PYTHONPATH=/tmp/old/src:. .venv/bin/python -m bench.first_stream
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.in_process import start_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", default="af_heart")
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--jobs", type=int, default=8, help="pool jobs to print, from the first")
    parser.add_argument("--port", type=int, default=18720)
    parser.add_argument("--output", default="bench-results/first-stream")
    args = parser.parse_args()

    t0 = time.monotonic()
    served = start_server(args.port)
    state = served.state
    pool = state.service.runtime.pool
    submitted = pool.run
    jobs: list[tuple[float, str]] = []

    async def traced(fn: Any, **kw: Any) -> Any:
        start = time.monotonic()
        began: list[float] = []

        def run() -> Any:
            began.append(time.monotonic())
            return fn()

        result = await submitted(run, **kw)
        end, due = time.monotonic(), kw.get("deadline")
        jobs.append(
            (
                start,
                f"t={start - t0:7.3f} first={not kw.get('playing', True)!s:5} cost={kw.get('cost', 0.0):.3f} "
                f"due in {(due - start) if due else 0.0:+.3f} wait={began[0] - start:.3f} work={end - began[0]:.3f}",
            )
        )
        return result

    pool.run = traced
    print(f"ready after {time.monotonic() - t0:.1f} s")
    command = [sys.executable, "-m", "voxserve", "bench", "--url", f"http://127.0.0.1:{args.port}"]
    command += ["--voice", args.voice, "--concurrency", "1", "--duration", str(args.duration), "--output", args.output]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    print(out.stdout.strip())
    results = json.loads((Path(args.output) / "results.json").read_text())
    records = [r for level in results["series"][0]["levels"] for r in level["records"]]
    for r in sorted(records, key=lambda r: r["started_s"]):
        print(f"request at {r['started_s']:.2f} s: stalled {r['underrun_s']:.2f} s at {r['underrun_at_s']} s of audio")
    for _, line in sorted(jobs)[: args.jobs]:
        print(line)
    served.stop()


if __name__ == "__main__":
    main()
