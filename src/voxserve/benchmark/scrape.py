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
