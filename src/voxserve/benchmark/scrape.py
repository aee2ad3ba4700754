"""Reading the server's Prometheus ``/metrics``: process figures for the soak, and the server's own
stall and load series when it exports them (older servers do not; then they are simply absent)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

# sample name → the key it is reported under
PROCESS = {
    "process_resident_memory_bytes": "rss_bytes",
    "process_open_fds": "open_fds",
    "voxserve_threads": "threads",
}
SERVER_SERIES = ("voxserve_stalled_streams_total", "voxserve_stall_seconds_sum", "voxserve_stall_seconds_count")
LOAD = "voxserve_load"
REQUESTS = "voxserve_requests_total"
# request outcomes that are the server's own failure on each transport; 503 (at capacity, draining) is
# a refusal a client retries, not a failure
SERVER_FAILURES = ("500", "502", "504", "1011", "INTERNAL", "UNKNOWN", "internal_error", "engine_failure")


@dataclass(frozen=True)
class Scrape:
    """One read of ``/metrics``: ``at_s`` seconds after the soak began, the sums of the samples read."""

    at_s: float
    values: dict[str, float]


def parse(text: str) -> dict[str, float]:
    """Process figures, the server's stall totals (summed over labels) and load, from exposition text."""
    wanted = {*PROCESS, *SERVER_SERIES, LOAD}
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in wanted:
                key = PROCESS.get(sample.name, sample.name)
                values[key] = values.get(key, 0.0) + float(sample.value)
    return values


async def scrape(client: httpx.AsyncClient, at_s: float) -> Scrape:
    response = await client.get("/metrics")
    response.raise_for_status()
    return Scrape(at_s, parse(response.text))


def stall_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """How much the server's own stall counters rose between two scrapes (empty when it has none)."""
    return {name: after[name] - before.get(name, 0.0) for name in SERVER_SERIES if name in after}


def server_failures(text: str) -> dict[str, float]:
    """Requests the server counted as its own failure (500/502/504, WebSocket 1011, gRPC INTERNAL/UNKNOWN),
    by ``transport route status``, from exposition text; empty when there were none. A WebSocket's status
    is the close code of whichever side closed, so a client closing with 1011 is counted too."""
    failures: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            status = sample.labels.get("status", "")
            if sample.name == REQUESTS and sample.value and status.startswith(SERVER_FAILURES):
                key = f"{sample.labels.get('transport')} {sample.labels.get('route')} {status}"
                failures[key] = failures.get(key, 0.0) + float(sample.value)
    return failures
