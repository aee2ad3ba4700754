"""The `voxserve` command as a user runs it (real subprocesses, real models)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import soundfile as sf

VOXSERVE = [sys.executable, "-m", "voxserve"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOXSERVE, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_say_writes_a_wav_file(tmp_path: Path) -> None:
    out = tmp_path / "hello.wav"
    result = run("-q", "say", "Hello there, how can I help you today?", "-v", "en_US-joe-medium", "-o", str(out))
    assert result.returncode == 0, result.stderr
    audio, rate = sf.read(out)
    assert rate == 22_050
    assert 1.2 < len(audio) / rate < 4.0
    assert "real-time factor" in result.stderr


def test_say_reads_stdin_and_encodes_mp3_at_another_rate(tmp_path: Path) -> None:
    out = tmp_path / "out.mp3"
    result = run("-q", "say", "-v", "af_heart", "-f", "mp3", "-r", "16000", "-o", str(out), stdin="Good morning.")
    assert result.returncode == 0, result.stderr
    audio, rate = sf.read(out)
    assert rate == 16_000
    assert 0.5 < len(audio) / rate < 3.0


def test_errors_are_one_clear_line_and_a_nonzero_exit(tmp_path: Path) -> None:
    result = run("-q", "say", "Hi.", "-v", "xx_nobody", "-o", str(tmp_path / "x.wav"))
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("voxserve: error:") and "unknown voice" in lines[-1]
    result = run("-q", "say", "Hi.", "-v", "en_US-joe-medium", "-f", "wma", "-o", str(tmp_path / "x.wma"))
    assert result.returncode == 2 and "wma" in result.stderr


def test_a_setting_out_of_range_is_one_line_naming_its_variable() -> None:
    env = {**os.environ, "VOXSERVE_MAX_LOAD": "0"}
    result = subprocess.run(
        [*VOXSERVE, "-q", "serve", "--max-streams", "0"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 2
    lines = sorted(line for line in result.stderr.splitlines() if line.strip())
    assert "Traceback" not in result.stderr and len(lines) == 2, result.stderr
    assert lines[0].startswith("voxserve: error: setting max_load (VOXSERVE_MAX_LOAD, or its flag): ")
    assert "greater than 0" in lines[0]
    assert lines[1].startswith("voxserve: error: setting max_streams (VOXSERVE_MAX_STREAMS, or its flag): ")

    # an alias is named as the variable it is, a list's entry as the list, a check across settings by itself
    for name, value, expected in [
        ("STREAM_BUFFER_MS", "5", "setting stream_buffer_ms (VOXSERVE_STREAM_BUFFER_MS): "),
        ("VOXSERVE_ENGINES", "foo", "setting engines (VOXSERVE_ENGINES): "),
        ("VOXSERVE_TLS_CERTFILE", "/etc/hostname", "settings: TLS needs VOXSERVE_TLS_KEYFILE too"),
    ]:
        result = subprocess.run(
            [*VOXSERVE, "-q", "voices"], capture_output=True, text=True, env={**os.environ, name: value}, timeout=60
        )
        assert result.returncode == 2 and result.stderr.startswith(f"voxserve: error: {expected}"), result.stderr


def test_a_misspelt_variable_or_a_missing_provider_stops_the_server_before_it_listens(tmp_path: Path) -> None:
    """A name no setting reads would be ignored (``VOXSERVE_API_KEY_S``: a server without keys), and a
    provider this machine lacks would leave it up but never ready: both are refused at once, in one line,
    from the environment or from a ``.env`` file."""
    for env, where, expected in [
        ({"VOXSERVE_API_KEY_S": "k"}, None, "VOXSERVE_API_KEY_S is not a setting (did you mean VOXSERVE_API_KEYS?)"),
        ({}, "VOXSERVE_MAX_LOD=0.5\n", "VOXSERVE_MAX_LOD is not a setting (did you mean VOXSERVE_MAX_LOAD?)"),
        ({"VOXSERVE_PROVIDERS": "rocm"}, None, "ONNX Runtime provider 'rocm' is not available here"),
    ]:
        folder = tmp_path / str(len(expected))
        folder.mkdir()
        if where is not None:
            (folder / ".env").write_text(where)
        result = subprocess.run(
            [*VOXSERVE, "-q", "serve", "--port", "0"],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=folder,
            timeout=60,
        )
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert lines[0].startswith("voxserve: error: ") and expected in lines[0], result.stderr


def test_voices_lists_both_engines() -> None:
    result = run("-q", "voices")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 + 55
    assert any(line.split()[0] == "en_US-joe-medium" and line.split()[-1] == "piper" for line in lines[1:])
    assert any(line.split()[:4] == ["zf_xiaoxiao", "zh", "female", "kokoro"] for line in lines[1:])


def test_a_reader_that_goes_away_is_no_error_and_models_names_its_missing_action() -> None:
    """``voxserve voices | head`` is normal use: the pipe closing early ends the listing quietly."""
    piped = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m voxserve -q voices | true"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0 and "Traceback" not in piped.stderr, piped.stderr
    bare = run("models")
    assert bare.returncode == 2 and bare.stderr.splitlines()[-1].endswith("required: action"), bare.stderr


def test_models_fetch_on_a_complete_cache_installs_nothing() -> None:
    """The split graphs already current are verified, not reported as installed again."""
    result = run("-q", "models", "fetch", "--no-learn")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("nothing to install; "), result.stdout


def test_models_list_shows_checksums() -> None:
    result = run("-q", "models", "list")
    assert result.returncode == 0, result.stderr
    assert "kokoro-v1.0.int8.onnx" in result.stdout and "6e742170" in result.stdout


def test_models_fetch_names_piper_catalog_voices_clearly(tmp_path: Path) -> None:
    for name, message in [("thorsten", "piper:<voice>"), ("piper:thorsten", "not a Piper catalog voice name")]:
        result = run("-q", "models", "fetch", name)
        assert result.returncode != 0 and message in result.stderr, result.stderr
