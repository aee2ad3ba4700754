"""`voxserve say` refuses bad options with one line and never damages an existing output file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import soundfile as sf

from voxserve import cli
from voxserve.errors import VoxError

VOXSERVE = [sys.executable, "-m", "voxserve"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VOXSERVE, *args], capture_output=True, text=True, timeout=120)


def assert_one_error_line(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("voxserve: error:"), result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_unwritable_outputs_are_one_clear_error(tmp_path: Path) -> None:
    assert_one_error_line(run("-q", "say", "Hi.", "-o", str(tmp_path / "missing" / "x.wav")), "does not exist")
    assert_one_error_line(run("-q", "say", "Hi.", "-o", str(tmp_path)), "is a directory")


@pytest.mark.parametrize("rate", ["7", "7999", "48001"])
def test_sample_rate_outside_the_server_range_is_refused(tmp_path: Path, rate: str) -> None:
    assert_one_error_line(run("-q", "say", "Hi.", "-r", rate, "-o", str(tmp_path / "x.wav")), "8000", "48000")
    assert not (tmp_path / "x.wav").exists()


def test_a_bad_speed_or_empty_text_is_refused_before_the_models_load(tmp_path: Path) -> None:
    """What can be checked without the voices fails at once: loading the models takes seconds. With an
    empty cache and no models anywhere, a load would fail first, with another error."""
    env = {**os.environ, "VOXSERVE_CACHE_DIR": str(tmp_path / "cache"), "VOXSERVE_MODEL_PATH": str(tmp_path)}
    for args, needle in ((("Hi.", "-s", "3"), "speed must be between"), (("  ",), "input text is empty")):
        result = subprocess.run(
            [*VOXSERVE, "-q", "say", *args, "-o", str(tmp_path / "x.wav")], capture_output=True, text=True, env=env
        )
        assert_one_error_line(result, needle)
    assert not (tmp_path / "x.wav").exists()


def test_format_comes_from_the_extension_and_must_agree_with_it() -> None:
    assert cli._output_format(None, "x.flac") == "flac"
    assert cli._output_format(None, "x.OGG") == "opus"
    assert cli._output_format(None, None) == "wav"
    assert cli._output_format(None, "noext") == "wav"
    assert cli._output_format("mp3", None) == "mp3"
    assert cli._output_format("wav", "x.WAV") == "wav"
    assert cli._output_format("pcm", "x.bin") == "pcm"  # an extension that names no format is no conflict
    with pytest.raises(VoxError, match="does not match"):
        cli._output_format("flac", "x.wav")


def test_format_contradicting_the_extension_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "x.wav"
    assert_one_error_line(run("-q", "say", "Hi.", "-f", "flac", "-o", str(out)), "flac", "x.wav")
    assert not out.exists()


def test_blend_with_a_piper_voice_says_only_kokoro_voices_blend(tmp_path: Path) -> None:
    result = run("-q", "say", "Hi.", "-v", "af_heart:0.5+en_US-joe-medium:0.5", "-o", str(tmp_path / "x.wav"))
    assert_one_error_line(result, "only Kokoro voices can be blended", "en_US-joe-medium")
    assert "unknown voice" not in result.stderr


def test_failed_synthesis_leaves_an_existing_file_alone(tmp_path: Path) -> None:
    keep = tmp_path / "keep.wav"
    keep.write_bytes(b"previous audio")
    result = run("-q", "say", "Hello [hi](/xyz§§/) there", "-o", str(keep))
    assert result.returncode == 2, result.stderr
    assert keep.read_bytes() == b"previous audio"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.wav"]  # no partial file left behind


def test_success_replaces_an_existing_file_and_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "out.wav"
    out.write_bytes(b"old")
    out.chmod(0o640)
    result = run("-q", "say", "Hello.", "-v", "en_US-joe-medium", "-o", str(out))
    assert result.returncode == 0, result.stderr
    audio, rate = sf.read(out)
    assert rate == 22_050 and len(audio) > 0
    assert out.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["out.wav"]


def test_serves_flags_set_the_capacity_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``--max-load`` is the capacity knob admission books by; ``--max-streams`` only a ceiling."""
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    settings = cli._settings(cli.build_parser().parse_args(["serve", "--max-load", "0.5", "--max-streams", "7"]))
    assert (settings.max_load, settings.max_streams) == (0.5, 7)
