from __future__ import annotations

import pytest

from voxserve.settings import Settings


def test_defaults() -> None:
    s = Settings(_env_file=None)
    assert s.default_voice == "af_heart"
    assert s.stream_buffer_ms == 200
    assert not s.auth_enabled


def test_prefixed_env_and_deployment_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL_PATH", "/models")
    monkeypatch.setenv("STREAM_BUFFER_MS", "120")
    monkeypatch.setenv("VOXSERVE_API_KEYS", "k1, k2")
    monkeypatch.setenv("VOXSERVE_ENGINES", '["piper"]')
    s = Settings(_env_file=None)
    assert str(s.model_path) == "/models"
    assert s.stream_buffer_ms == 120
    assert s.api_keys == ["k1", "k2"]
    assert s.engines == ["piper"]
    assert s.auth_enabled


def test_prefixed_names_win_over_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOXSERVE_STREAM_BUFFER_MS", "80")
    assert Settings(_env_file=None).stream_buffer_ms == 80


def test_invalid_values_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOXSERVE_STREAM_BUFFER_MS", "5")
    with pytest.raises(ValueError, match=r"(?i)stream_buffer_ms"):
        Settings(_env_file=None)


def test_trusted_proxies_are_addresses_or_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOXSERVE_TRUSTED_PROXIES", "10.0.0.0/8, ::1")
    assert Settings(_env_file=None).trusted_proxies == ["10.0.0.0/8", "::1"]
    monkeypatch.setenv("VOXSERVE_TRUSTED_PROXIES", "10.0.0.0/8,nginx")
    with pytest.raises(ValueError, match="'nginx' is not an address or network"):
        Settings(_env_file=None)
