"""Every metric the shipped dashboard, alert rules and autoscaler rule read is one a real server
exports. The names are read out of those files themselves (deploy/grafana/dashboards/*.json,
deploy/prometheus/alerts.yml, the chart's Prometheus Adapter rule), so a panel or rule added there
is checked here without a list to keep in step."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from voxserve.server.runtime_api import RuntimeLike

from .support import PIPER, SHORT, RunningServer, SharedRuntime, server_settings

ROOT = Path(__file__).resolve().parents[2]
# series Prometheus makes itself for each target, not read from /metrics
SCRAPE_SERIES = {"up"}
# the sample names of each metric type (a labelled metric is declared before its first sample)
SAMPLES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "info": ("_info",),
}

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_VARIABLES = re.compile(r"\$\{?\w+\}?")  # Grafana's $job, $__rate_interval …
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(?![\w:]|\s*\()")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "group_left", "group_right", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what is left once strings, variables, label
    matchers, ranges and grouping clauses are taken out, less functions (followed by a parenthesis)
    and keywords."""
    for pattern in (_STRINGS, _VARIABLES, _MATCHERS, _RANGES, _GROUPING):
        expr = pattern.sub(" ", expr)
    return {name for name in _IDENTIFIER.findall(expr) if name.lower() not in _KEYWORDS}


def test_metric_names_are_read_out_of_promql() -> None:
    expr = (
        'histogram_quantile(0.9, sum by (engine, le) (rate(voxserve_x_bucket{job=~"$job", route!~"/a|b"}'
        "[$__rate_interval]))) / on (job) group_left max without (pod) (up offset 2h) > bool 1e3 and foo:bar"
    )
    assert metric_names(expr) == {"voxserve_x_bucket", "up", "foo:bar"}


def used_expressions() -> dict[str, list[str]]:
    """Each deployment file's PromQL expressions."""
    found: dict[str, list[str]] = {}
    for board in sorted((ROOT / "deploy/grafana/dashboards").glob("*.json")):
        data = json.loads(board.read_text())
        exprs = [t["expr"] for panel in data["panels"] for t in panel.get("targets", [])]
        exprs += [v["query"]["query"] for v in data.get("templating", {}).get("list", []) if v["type"] == "query"]
        found[str(board.relative_to(ROOT))] = exprs
    alerts = ROOT / "deploy/prometheus/alerts.yml"
    groups = yaml.safe_load(alerts.read_text())["groups"]
    found[str(alerts.relative_to(ROOT))] = [rule["expr"] for group in groups for rule in group["rules"]]
    adapter = ROOT / "deploy/helm/voxserve/files/adapter-rules.yaml"
    found[str(adapter.relative_to(ROOT))] = [
        rule["seriesQuery"] for rule in yaml.safe_load(adapter.read_text())["rules"]
    ]
    return found


def used_names() -> dict[str, set[str]]:
    """metric name -> the files that read it (Grafana's label_values(metric, label) included)."""
    names: dict[str, set[str]] = {}
    for where, exprs in used_expressions().items():
        for expr in exprs:
            expr = re.sub(r"label_values\(([^,()]*)(?:,[^()]*)?\)", r"(\1)", expr)
            for name in metric_names(expr):
                names.setdefault(name, set()).add(where)
    return names


@pytest.fixture(scope="module")
def scraped(shared_runtime: RuntimeLike) -> Iterator[set[str]]:
    """The sample names a real server's /metrics declares, after one synthesis (so its histograms have
    series). A labelled counter such as voxserve_stalled_streams_total has no sample before its first
    increment, but its HELP and TYPE lines are there."""
    server = RunningServer(server_settings(), SharedRuntime(shared_runtime))
    try:
        body = {"input": SHORT, "voice": PIPER, "response_format": "pcm"}
        assert httpx.post(server.base + "/v1/audio/speech", json=body, timeout=60).status_code == 200
        text = httpx.get(server.base + "/metrics").text
    finally:
        server.stop()
    families = list(text_string_to_metric_families(text))
    declared = {family.name + suffix for family in families for suffix in SAMPLES.get(family.type, ("",))}
    yield declared | {sample.name for family in families for sample in family.samples}


@pytest.mark.e2e
def test_every_metric_the_dashboard_and_rules_read_is_exported(scraped: set[str]) -> None:
    names = used_names()
    assert {"voxserve_time_to_first_audio_seconds_bucket", "voxserve_load", "process_resident_memory_bytes"} <= set(
        names
    )
    missing = {name: sorted(files) for name, files in names.items() if name not in scraped | SCRAPE_SERIES}
    assert not missing, f"read by the deployment files but not exported by /metrics: {missing}"
