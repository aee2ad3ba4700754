from __future__ import annotations

from pathlib import Path

import pytest

from voxserve.settings import Settings, unknown_variables


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


@pytest.mark.parametrize(
    ("name", "value"), [("CLIENT_STALL_S", "inf"), ("MAX_LOAD", "nan"), ("QUEUE_TIMEOUT_S", "nan")]
)
def test_a_number_that_is_not_finite_is_refused_as_such(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    """``inf`` passed every lower bound and switched the stalled-client guard off unseen; ``nan`` was
    refused as "less than or equal to" a bound it is not above."""
    monkeypatch.setenv(f"VOXSERVE_{name}", value)
    with pytest.raises(ValueError, match=f"(?is){name}.*finite number"):
        Settings(_env_file=None)


def test_trusted_proxies_are_addresses_or_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOXSERVE_TRUSTED_PROXIES", "10.0.0.0/8, ::1")
    assert Settings(_env_file=None).trusted_proxies == ["10.0.0.0/8", "::1"]
    monkeypatch.setenv("VOXSERVE_TRUSTED_PROXIES", "10.0.0.0/8,nginx")
    with pytest.raises(ValueError, match="'nginx' is not an address or network"):
        Settings(_env_file=None)
    # a network written loosely is stored as the network it names: HTTP's proxy check (uvicorn) parses
    # strictly and would take "127.0.0.1/8" for a name, where gRPC's matched it as a network
    monkeypatch.setenv("VOXSERVE_TRUSTED_PROXIES", "127.0.0.1/8, *, 10.1.2.3/32")
    assert Settings(_env_file=None).trusted_proxies == ["127.0.0.0/8", "*", "10.1.2.3"]


def test_ports_are_in_range_and_tls_needs_both_existing_files(tmp_path: Path) -> None:
    for port in (-1, 70000):
        with pytest.raises(ValueError, match="port"):
            Settings(_env_file=None, port=port)
        with pytest.raises(ValueError, match="grpc_port"):
            Settings(_env_file=None, grpc_port=port)
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    with pytest.raises(ValueError, match="TLS needs VOXSERVE_TLS_KEYFILE too"):
        Settings(_env_file=None, tls_certfile=cert)
    with pytest.raises(ValueError, match="VOXSERVE_TLS_KEYFILE: no such file"):
        Settings(_env_file=None, tls_certfile=cert, tls_keyfile=tmp_path / "missing.pem")
    assert Settings(_env_file=None, tls_certfile=cert, tls_keyfile=cert).tls_keyfile == cert
    with pytest.raises(ValueError, match=r"the folder of .* does not exist"):
        Settings(_env_file=None, audit_log_file=tmp_path / "missing" / "audit.log")
    assert Settings(_env_file=None, audit_log_file=tmp_path / "audit.log").audit_log_file == tmp_path / "audit.log"


def test_jwt_algorithms_are_ones_a_configured_key_can_check() -> None:
    with pytest.raises(ValueError, match="unknown JWT algorithm"):
        Settings(_env_file=None, jwt_algorithms=["none"])
    with pytest.raises(ValueError, match=r"unknown JWT algorithm.*hs256"):
        Settings(_env_file=None, jwt_algorithms=["HS256", "hs256"])
    with pytest.raises(ValueError, match="VOXSERVE_JWT_SECRET is set but VOXSERVE_JWT_ALGORITHMS has none"):
        Settings(_env_file=None, jwt_secret="s3cret", jwt_algorithms=["RS256"])
    with pytest.raises(ValueError, match="VOXSERVE_JWT_PUBLIC_KEY is set but"):
        Settings(_env_file=None, jwt_public_key="-----BEGIN PUBLIC KEY-----", jwt_algorithms=["HS512"])
    assert Settings(_env_file=None, jwt_secret="s3cret", jwt_algorithms=["HS512"]).jwt_algorithms == ["HS512"]


def test_a_variable_no_setting_reads_is_named_with_the_setting_it_looks_like() -> None:
    environ = {
        "VOXSERVE_API_KEY_S": "k",  # misspelt: the server would run without keys
        "voxserve_max_lod": "0.5",
        "VOXSERVE_MAX_LOAD": "0.5",  # a setting
        "voxserve_port": "9000",  # a setting, in lower case as pydantic-settings reads it too
        "VOXSERVE_API_KEY": "k",  # the clients' variable
        "VOXSERVE_ZZZ": "1",
        "PATH": "/bin",
    }
    assert unknown_variables(environ) == [
        "VOXSERVE_API_KEY_S is not a setting (did you mean VOXSERVE_API_KEYS?)",
        "VOXSERVE_ZZZ is not a setting",
        "voxserve_max_lod is not a setting (did you mean VOXSERVE_MAX_LOAD?)",
    ]
