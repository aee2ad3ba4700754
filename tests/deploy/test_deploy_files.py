"""The deployment files agree with the code: every setting they set exists and takes their value, the
nginx upstreams are the compose services on the ports the replicas listen on, the image is built from
files the build context holds, and the Helm templates only read values that values.yaml defines.

(No container engine or Helm runs here; these catch the mistakes that would otherwise surface only in
someone's cluster: a misspelt variable is silently ignored by pydantic-settings.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from voxserve.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "voxserve"
ENV_NAME = re.compile(r"\bVOXSERVE_[A-Z0-9_]+\b")


def known_variables() -> set[str]:
    return {f"VOXSERVE_{name.upper()}" for name in Settings.model_fields}


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def dockerfile_env(name: str = "Dockerfile") -> dict[str, str]:
    text = (ROOT / name).read_text().replace("\\\n", " ")
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            found.update(re.findall(r"(\w+)=(\S+)", line))
    return found


def mentioned(path: Path) -> set[str]:
    return set(ENV_NAME.findall(path.read_text()))


@pytest.mark.parametrize(
    "path",
    [
        ROOT / "Dockerfile",
        ROOT / "Dockerfile.gpu",
        ROOT / "compose.yaml",
        CHART / "values.yaml",
        *sorted((CHART / "templates").iterdir()),
        *sorted((CHART / "ci").iterdir()),
    ],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_variable_named_is_a_setting(path: Path) -> None:
    assert mentioned(path) <= known_variables(), mentioned(path) - known_variables()


def test_the_settings_they_set_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    helm_env = yaml.safe_load((CHART / "values.yaml").read_text())["env"]
    services = compose()["services"]
    for env in (dockerfile_env(), dockerfile_env("Dockerfile.gpu"), services["voxserve-1"]["environment"], helm_env):
        for name in known_variables():
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            if name.startswith("VOXSERVE_"):
                monkeypatch.setenv(name, str(value))
        settings = Settings(_env_file=None)
        assert settings.host == "0.0.0.0" or "VOXSERVE_HOST" not in env


def test_nginx_upstreams_are_the_compose_replicas() -> None:
    conf = (ROOT / "deploy" / "nginx" / "voxserve.conf").read_text()
    services = compose()["services"]
    upstreams = set(re.findall(r"^\s*server\s+([\w.-]+):(\d+)", conf, flags=re.M))
    replicas = {name for name in services if name.startswith("voxserve-")}
    assert {host for host, _ in upstreams} == replicas
    env = dockerfile_env()
    assert {port for _, port in upstreams} == {env["VOXSERVE_PORT"], env["VOXSERVE_GRPC_PORT"]}
    # the proxy's network is the one the replicas trust for X-Forwarded-For
    subnet = compose()["networks"]["voxserve"]["ipam"]["config"][0]["subnet"]
    assert services["voxserve-1"]["environment"]["VOXSERVE_TRUSTED_PROXIES"] == subnet
    published = {entry.split(":")[1] for entry in services["nginx"]["ports"]}
    assert published == set(re.findall(r"^\s*listen\s+(\d+)", conf, flags=re.M))


@pytest.mark.parametrize("dockerfile", ["Dockerfile", "Dockerfile.gpu"])
def test_the_image_is_built_from_files_the_context_holds(dockerfile: str) -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line.strip()}
    for line in (ROOT / dockerfile).read_text().splitlines():
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
                assert source not in ignored, source
    assert "src/voxserve/server/grpc_gen" in ignored  # generated in the image by setup.py, never copied


def value_paths(node: object, prefix: str = "") -> set[str]:
    paths = {prefix} if prefix else set()
    if isinstance(node, dict):
        for key, child in node.items():
            paths |= value_paths(child, f"{prefix}.{key}" if prefix else str(key))
    return paths


def test_helm_templates_read_only_defined_values() -> None:
    values = value_paths(yaml.safe_load((CHART / "values.yaml").read_text()))
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "voxserve"
    used: set[str] = set()
    for template in (CHART / "templates").iterdir():
        used |= set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", template.read_text()))
    assert used and used <= values, used - values


@pytest.mark.parametrize(("dockerfile", "count"), [("Dockerfile", 2), ("Dockerfile.gpu", 3)])
def test_the_voxserve_commands_in_the_image_parse(dockerfile: str, count: int) -> None:
    from voxserve.cli import build_parser

    text = (ROOT / dockerfile).read_text()
    commands = [m.split() for m in re.findall(r"/opt/voxserve/bin/voxserve ([^\n&\\]+)", text)]
    commands += [json.loads(m)[1:] for m in re.findall(r"^CMD (\[.*\])$", text, flags=re.M)]
    assert len(commands) == count
    for args in commands:
        build_parser().parse_args(args)  # exits (SystemExit) on an unknown option
