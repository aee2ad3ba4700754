"""The monitoring files hold together: promtool accepts the Prometheus config and the alert rules and
passes the rules' unit tests, Prometheus scrapes every compose replica, and the Grafana dashboard has
the panels operators need, on the datasource that is provisioned for it. (Whether the metrics the
panels and rules read are exported is checked against a live server: tests/server/test_dashboard_metrics.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from .test_deploy_files import compose, dockerfile_env
from .tools import ROOT, docker_compose, promtool, run

PROMETHEUS = ROOT / "deploy" / "prometheus"
GRAFANA = ROOT / "deploy" / "grafana"
OVERLAY = ROOT / "deploy" / "compose.monitoring.yaml"

pytestmark = pytest.mark.e2e


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GRAFANA / "dashboards" / "voxserve.json").read_text())
    return data


def test_promtool_accepts_the_alert_rules() -> None:
    result = run(promtool(), "check", "rules", str(PROMETHEUS / "alerts.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 8 rules found" in result.stdout


def test_the_alert_rules_pass_their_unit_tests() -> None:
    result = run(promtool(), "test", "rules", "alerts_test.yml", cwd=PROMETHEUS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
    tested = {case["alertname"] for group in yaml.safe_load((PROMETHEUS / "alerts_test.yml").read_text())["tests"]
              for case in group["alert_rule_test"] if case["exp_alerts"]}  # fmt: skip
    rules = {rule["alert"] for rule in yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"][0]["rules"]}
    assert tested == rules  # every alert is shown to fire on the series that should raise it


def test_the_unit_tests_catch_a_wrong_threshold(tmp_path: Path) -> None:
    """The rule tests can fail: with the load threshold raised, the sustained-load case no longer fires."""
    rules = (PROMETHEUS / "alerts.yml").read_text()
    assert "avg by (job) (voxserve_load) > 0.8" in rules
    (tmp_path / "alerts.yml").write_text(rules.replace("(voxserve_load) > 0.8", "(voxserve_load) > 0.9"))
    (tmp_path / "alerts_test.yml").write_text((PROMETHEUS / "alerts_test.yml").read_text())
    result = run(promtool(), "test", "rules", "alerts_test.yml", cwd=tmp_path)
    assert result.returncode != 0 and "VoxserveLoadHigh" in result.stdout + result.stderr


def test_promtool_accepts_the_prometheus_config() -> None:
    result = run(promtool(), "check", "config", str(PROMETHEUS / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout


def test_prometheus_scrapes_every_compose_replica() -> None:
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == "voxserve"]
    assert job["metrics_path"] == "/metrics"
    targets = {target for group in job["static_configs"] for target in group["targets"]}
    replicas = {name for name in compose()["services"] if name.startswith("voxserve-")}
    assert targets == {f"{name}:{dockerfile_env()['VOXSERVE_PORT']}" for name in replicas}


def test_the_monitoring_overlay_mounts_these_files() -> None:
    """docker-compose resolves the overlay's paths against the repository root: Prometheus gets this
    config and rules, Grafana these provisioning files and dashboards, all on the replicas' network."""
    result = run(docker_compose(), "-f", "compose.yaml", "-f", str(OVERLAY), "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    mounts = {
        (name, mount["target"]): Path(mount["source"])
        for name in ("prometheus", "grafana")
        for mount in services[name]["volumes"]
        if mount["type"] == "bind"
    }
    assert mounts == {
        ("prometheus", "/etc/prometheus"): PROMETHEUS,
        ("grafana", "/etc/grafana/provisioning"): GRAFANA / "provisioning",
        ("grafana", "/var/lib/grafana/dashboards"): GRAFANA / "dashboards",
    }
    assert "--config.file=/etc/prometheus/prometheus.yml" in services["prometheus"]["command"]
    assert {"voxserve-1", "voxserve-2", "nginx"} <= set(services)
    assert all(set(services[name]["networks"]) == {"voxserve"} for name in ("prometheus", "grafana", "voxserve-1"))
    home = services["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == "/var/lib/grafana/dashboards/voxserve.json"


PANELS: dict[str, tuple[str, str | None]] = {
    "First audio P50 / P90 / P99": ("voxserve_time_to_first_audio_seconds_bucket", "engine, transport"),
    "Real-time factor": ("voxserve_real_time_factor_bucket", "engine"),
    "Active streams": ("voxserve_active_streams", "instance"),
    "Load against capacity": ("voxserve_load", None),
    "Stalls per minute": ("voxserve_stalled_streams_total", "engine, transport"),
    "Refusals per minute": ("voxserve_requests_total", "transport, status"),
    "Errors by code": ("voxserve_requests_total", "transport, status"),
    "Resident memory": ("process_resident_memory_bytes", None),
    "Worker queue": ("voxserve_worker_jobs_queued", "instance"),
    "Playing margin": ("voxserve_playing_margin_seconds", None),
}  # title: (a metric it reads, its grouping: per engine/transport, per replica, or each series as is)


def test_the_dashboard_has_the_panels_operators_need() -> None:
    panels = {panel["title"]: panel for panel in dashboard()["panels"]}
    for title, (metric, grouping) in PANELS.items():
        exprs = [target["expr"] for target in panels[title]["targets"]]
        assert any(metric in expr and (grouping is None or f"by ({grouping}" in expr) for expr in exprs), exprs
    first_audio = " ".join(target["expr"] for target in panels["First audio P50 / P90 / P99"]["targets"])
    assert all(f"histogram_quantile({q}," in first_audio for q in ("0.5", "0.9", "0.99"))
    refusals = panels["Refusals per minute"]["targets"][0]["expr"]
    assert all(code in refusals for code in ("429", "503", "1013", "RESOURCE_EXHAUSTED"))


def test_the_dashboard_reads_the_provisioned_datasource() -> None:
    (source,) = yaml.safe_load((GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text())["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    board = dashboard()
    used = [panel["datasource"] for panel in board["panels"]]
    used += [target["datasource"] for panel in board["panels"] for target in panel["targets"]]
    used += [variable["datasource"] for variable in board["templating"]["list"]]
    assert all(ref == {"type": "prometheus", "uid": source["uid"]} for ref in used)
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    (provider,) = yaml.safe_load((GRAFANA / "provisioning" / "dashboards" / "voxserve.yml").read_text())["providers"]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"


def test_the_deploy_guide_lists_every_panel() -> None:
    guide = (ROOT / "docs" / "deploy.md").read_text()
    missing = [panel["title"] for panel in dashboard()["panels"] if f"| {panel['title']}" not in guide]
    assert not missing, missing
