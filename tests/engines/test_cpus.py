"""The cores a process may use: its affinity mask, capped by its cgroup's CPU quota."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from voxserve.engines.cpus import cgroup_quota, usable_cores


def v2(tmp_path: Path, text: str) -> Path:
    (tmp_path / "cpu.max").write_text(text)
    return tmp_path


def v1(tmp_path: Path, quota_us: int, period_us: int = 100_000) -> Path:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text(f"{quota_us}\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text(f"{period_us}\n")
    return tmp_path


def test_a_quota_is_read_in_cores_from_either_cgroup_version(tmp_path: Path) -> None:
    (tmp_path / "v2").mkdir()
    (tmp_path / "v1").mkdir()
    assert cgroup_quota(v2(tmp_path / "v2", "150000 100000\n")) == 1.5
    assert cgroup_quota(v1(tmp_path / "v1", 400_000)) == 4.0


@pytest.mark.parametrize("text", ["max 100000\n", "garbage\n"])
def test_no_quota_or_an_unreadable_one_caps_nothing(tmp_path: Path, text: str) -> None:
    assert cgroup_quota(v2(tmp_path, text)) is None
    assert usable_cores(tmp_path) == len(os.sched_getaffinity(0))


def test_v1_without_a_quota_caps_nothing(tmp_path: Path) -> None:
    assert cgroup_quota(v1(tmp_path, -1)) is None
    assert cgroup_quota(tmp_path / "absent") is None


def test_a_quota_below_the_affinity_caps_the_cores_rounded_up(tmp_path: Path) -> None:
    assert usable_cores(v2(tmp_path, "50000 100000\n")) == 1  # half a core still runs one thread


def test_the_affinity_mask_counts_not_the_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})  # as under `taskset -c 0`
    assert usable_cores(tmp_path) == 1
