"""Does one long request hold up everyone else? Against a real ``voxserve serve`` (Piper), one request
of N characters is sent while another client polls ``/healthz`` every 50 ms; prints the long
request's first audio and the worst health-check latency meanwhile (a stalled event loop shows here).

    .venv/bin/python -m bench.long_input --chars 700,20000,97000 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import httpx

from bench.server_ttfa import Server

SENTENCE = "Sentence number {} is here to make the audio long enough to matter. "


def one(server: Server, chars: int) -> tuple[float, float]:
    text = "".join(SENTENCE.format(i) for i in range(chars // 60 + 1))[:chars]
    latencies: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                start = time.perf_counter()
                client.get(server.base + "/healthz")
                latencies.append(time.perf_counter() - start)
                time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    time.sleep(0.3)
    body = {"input": text, "voice": "en_US-joe-medium", "response_format": "pcm"}
    start = time.perf_counter()
    with httpx.stream("POST", server.base + "/v1/audio/speech", json=body, timeout=120) as response:
        response.raise_for_status()
        next(response.iter_raw())
        first = time.perf_counter() - start
    time.sleep(0.5)
    stop.set()
    poller.join()
    return first, max(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", default="700,20000,97000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    server = Server(["piper"])
    try:
        print("| characters | first audio (median) | worst /healthz latency (median of runs) |")
        print("|---|---|---|")
        for chars in (int(c) for c in args.chars.split(",")):
            results = [one(server, chars) for _ in range(args.runs)]
            first = statistics.median(r[0] for r in results) * 1000
            worst = statistics.median(r[1] for r in results) * 1000
            print(f"| {chars:,} | {first:.0f} ms | {worst:.0f} ms |")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
