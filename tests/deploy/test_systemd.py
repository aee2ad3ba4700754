"""deploy/systemd: systemd's own checker accepts the units (with the install prefix pointed at this
environment's, since it checks that each command exists), and the units keep the promises docs/deploy.md
makes: restarted on failure, a /healthz watchdog that kills a hung server, time to drain on stop.
(The check helper itself runs against a real server in tests/server/test_systemd_healthcheck.py.)"""

from __future__ import annotations

import configparser
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from voxserve.settings import Settings

from .tools import ROOT, run

UNITS = ROOT / "deploy" / "systemd"
NAMES = ("voxserve.service", "voxserve-healthcheck.service", "voxserve-healthcheck.timer")
PREFIX = Path(sys.executable).parent.parent  # this venv stands in for /opt/voxserve


class _UnitParser(configparser.ConfigParser):
    """systemd keys are case-sensitive: keep them as written."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr


def unit(name: str) -> configparser.ConfigParser:
    parser = _UnitParser(strict=False, interpolation=None, comment_prefixes=("#", ";"))
    parser.read_string((UNITS / name).read_text())
    return parser


def installed(tmp: Path, text_of: dict[str, str]) -> list[str]:
    """Write the units into ``tmp`` with this environment's paths; their paths as verify arguments."""
    for name, text in text_of.items():
        text = text.replace("/opt/voxserve/libexec", str(UNITS)).replace("/opt/voxserve", str(PREFIX))
        (tmp / name).write_text(text)
    return [str(tmp / name) for name in text_of]


def verify(paths: list[str]) -> str:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is missing: make test installs it (scripts/system-deps.sh)"
    result = run(analyze, "verify", "--man=no", *paths)
    return f"rc={result.returncode} {result.stdout}{result.stderr}".strip()


@pytest.mark.e2e
def test_systemd_analyze_accepts_the_units(tmp_path: Path) -> None:
    assert verify(installed(tmp_path, {name: (UNITS / name).read_text() for name in NAMES})) == "rc=0"


@pytest.mark.e2e
def test_systemd_analyze_reports_a_misspelt_key(tmp_path: Path) -> None:
    text = (UNITS / "voxserve.service").read_text().replace("Restart=on-failure", "Restart=on-failure\nRestat=always")
    assert "Unknown key 'Restat'" in verify(installed(tmp_path, {"voxserve.service": text}))


def test_the_server_restarts_on_failure_and_drains_on_stop() -> None:
    service = unit("voxserve.service")["Service"]
    assert service["Restart"] == "on-failure"
    assert service["KillSignal"] == "SIGTERM"
    assert float(service["TimeoutStopSec"]) > Settings.model_fields["shutdown_grace_s"].default
    from voxserve.cli import build_parser

    program, *args = shlex.split(service["ExecStart"])
    assert program == "/opt/voxserve/bin/voxserve"
    build_parser().parse_args(args)


def test_the_watchdog_checks_healthz_and_kills_a_hung_server() -> None:
    server = unit("voxserve.service")
    assert "voxserve-healthcheck.timer" in server["Unit"]["Wants"].split()
    timer = unit("voxserve-healthcheck.timer")
    assert timer["Unit"]["PartOf"] == "voxserve.service"  # stopped with the server
    assert timer["Timer"]["OnUnitActiveSec"] == "15s"
    check = unit("voxserve-healthcheck.service")["Service"]
    assert check["Type"] == "oneshot"
    command = shlex.split(check["ExecStart"])[-1]
    probe, kill = command.split(" || ")
    assert probe.split()[1] == "/opt/voxserve/libexec/voxserve-healthcheck"
    assert kill == "exec systemctl kill --signal=SIGKILL voxserve.service"  # a signal death: on-failure restarts
