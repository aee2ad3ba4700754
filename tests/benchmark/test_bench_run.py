"""``voxserve bench`` against a real server over loopback: every transport, whole and incremental text,
and a short soak (with its provoked faults); the JSON and the plots are written and their values are sane."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.server.support import PIPER, RunningServer, SharedRuntime, server_settings
from tests.server.test_tls import self_signed

from voxserve.cli import main
from voxserve.runtime import Runtime

pytestmark = pytest.mark.alone  # the server's admission learns from stalls

PNG = b"\x89PNG\r\n\x1a\n"


def _bench(server: RunningServer, out: Path, *options: str) -> dict[str, Any]:
    argv = ["-q", "bench", "--url", server.base, "--grpc-target", server.grpc, "--voice", PIPER, "--output", str(out)]
    assert main([*argv, *options]) == 0
    data: dict[str, Any] = json.loads((out / "results.json").read_text())
    return data


def _check_records(records: list[dict[str, Any]], transports: set[str]) -> None:
    assert records and {r["transport"] for r in records} == transports
    for r in records:
        assert r["error"] is None, r
        first, last, audio = float(r["first_audio_s"]), float(r["last_audio_s"]), float(r["audio_s"])
        assert 0 < first <= last < 30
        # a short agent reply is one to a few seconds of speech, counted from the PCM bytes
        assert 0.8 < audio < 8, r
        assert float(r["rtf"]) == pytest.approx(last / audio)
        assert r["underruns"] == len(r["underrun_at_s"])


@pytest.mark.parametrize(
    ("transports", "options"),
    [("http", ("--saturation", "2")), ("ws,grpc", ("--incremental", "40"))],
    ids=["http-whole", "ws-grpc-incremental"],
)
def test_bench_writes_results_and_plots(
    bench_server: RunningServer, tmp_path: Path, transports: str, options: tuple[str, ...]
) -> None:
    data = _bench(bench_server, tmp_path, "--transport", transports, "--concurrency", "2", "--duration", "2", *options)
    [series] = data["series"]
    [level] = series["levels"]
    summary = level["summary"]
    assert summary["concurrency"] == 2 and summary["errors"] == 0 and summary["requests"] >= 2
    assert 0 < summary["first_audio_s"]["p50"] <= summary["first_audio_s"]["p90"] <= summary["first_audio_s"]["p99"]
    assert 0 <= summary["stall_rate"] <= 1
    assert summary["throughput"] == pytest.approx(summary["audio_s_total"] / summary["wall_s"])
    _check_records(level["records"], set(transports.split(",")))
    if "--saturation" in options:  # two unpaced listeners measured first: the most audio a second, in this run
        saturation = series["saturation"]["summary"]
        assert saturation["concurrency"] == 2 and saturation["errors"] == 0
        assert saturation["throughput"] > summary["throughput"] > 0
        _check_records(series["saturation"]["records"], {"http"})  # its requests are kept like a level's
    else:
        assert series["saturation"] is None
    for name in ("first_audio_cdf", "first_audio_vs_concurrency", "stall_rate_vs_concurrency", "throughput"):
        assert (tmp_path / f"{name}.png").read_bytes().startswith(PNG)


def test_soak_mixes_transports_and_reads_the_server_resources(bench_server: RunningServer, tmp_path: Path) -> None:
    # two listeners and the soak's fault-provoking client: within the server's capacity; unpaced, so that
    # every transport gets its turn within the 2.4 s
    data = _bench(
        bench_server, tmp_path, "--soak", "0.04", "--transport", "http,ws,grpc", "--concurrency", "2", "--unpaced"
    )
    soak = data["soak"]
    assert isinstance(soak, dict)
    _check_records(soak["records"], {"http", "ws", "grpc"})
    # cancels, disconnects and invalid requests ran beside them, each answered as the protocol says
    assert sum(soak["mischief"]["expected"].values()) >= 2 and not soak["mischief"]["unexpected"], soak["mischief"]
    assert soak["server_failures"] == {}
    growth = {row["name"]: row for row in soak["growth"]}
    assert set(growth) == {"rss_bytes", "open_fds", "threads"}
    assert growth["rss_bytes"]["end"] > 50 * 2**20 and 3 < growth["threads"]["end"] < 1000
    assert growth["open_fds"]["end"] > 3
    assert (tmp_path / "soak_resources.png").read_bytes().startswith(PNG)


def test_bench_refuses_incremental_http_and_unknown_voices(bench_server: RunningServer, tmp_path: Path) -> None:
    base = ["-q", "bench", "--url", bench_server.base, "--output", str(tmp_path)]
    assert main([*base, "--transport", "http", "--incremental", "5"]) == 2
    assert main([*base, "--voice", "nobody"]) == 2
    assert main([*base, "--transport", "smoke"]) == 2
    assert not (tmp_path / "results.json").exists()


def test_bench_refuses_a_grpc_target_with_no_server_before_any_request(
    bench_server: RunningServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The HTTP URL answers but nothing serves gRPC where the run would send it: one clear error, exit 2,
    instead of a run whose every request fails."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nowhere = f"127.0.0.1:{probe.getsockname()[1]}"
    args = ["-q", "bench", "--url", bench_server.base, "--output", str(tmp_path), "--transport", "grpc"]
    assert main([*args, "--grpc-target", nowhere, "--duration", "2"]) == 2
    error = capsys.readouterr().err
    assert f"gRPC at {nowhere}: UNAVAILABLE" in error and "--grpc-target" in error, error
    assert not (tmp_path / "results.json").exists()


def test_bench_measures_every_transport_of_a_tls_server(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against an https URL the gRPC channel is TLS too, trusting the certificates ``SSL_CERT_FILE`` names,
    as HTTP and the WebSocket do (it was plaintext, and every gRPC request failed)."""
    certfile, keyfile = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(certfile))
    settings = server_settings(engines=["piper"], tls_certfile=certfile, tls_keyfile=keyfile)
    running = RunningServer(settings, SharedRuntime(runtime))
    try:
        assert running.base.startswith("https:")
        data = _bench(running, tmp_path / "out", "--transport", "http,ws,grpc", "--unpaced", "--duration", "2")
    finally:
        running.stop()
    [series] = data["series"]
    [level] = series["levels"]
    _check_records(level["records"], {"http", "ws", "grpc"})
