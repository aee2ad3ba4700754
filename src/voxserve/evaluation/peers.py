"""Peer libraries run over the same sentences, so that every voxserve figure has one beside it.

* ``kokoro-onnx`` (MIT) with the same Kokoro model and voice tables as voxserve, its own espeak-ng
  phonemizer, through :mod:`voxserve.evaluation.peer_kokoro_onnx`.
* ``piper-tts`` (GPL-3.0) with the same Piper voice, through its own command line (``python -m piper``).

Both pin ``phonemizer`` (the import name of the ``phonemizer-fork`` voxserve depends on), so they live
in a venv of their own (``make peers-venv`` builds ``.venv-peers`` from PyPI) and run as subprocesses
that exchange files with this process: voxserve never imports either library.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxserve.errors import InvalidInput
from voxserve.models import ModelStore

PEERS = ("kokoro-onnx", "piper-tts")
DEFAULT_PEERS_PYTHON = Path(".venv-peers") / "bin" / "python"
# espeak-ng language for each evaluated language (kokoro-onnx phonemizes with espeak-ng)
KOKORO_ONNX_LANG = {
    "en": "en-us",
    "zh": "cmn",
    "ja": "ja",
    "fr": "fr-fr",
    "es": "es",
    "it": "it",
    "pt": "pt-br",
    "hi": "hi",
}
PIPER_LANGUAGES = ("en",)  # the one Piper voice voxserve ships is en_US-joe-medium
_TIMEOUT_S = 3600


@dataclass(frozen=True)
class PeerAudio:
    samples: np.ndarray
    sample_rate: int


def parse(names: str) -> tuple[str, ...]:
    """``kokoro-onnx,piper-tts`` → the peers, in order; an unknown name is refused."""
    peers = tuple(dict.fromkeys(n.strip() for n in names.split(",") if n.strip()))
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        raise InvalidInput(f"unknown peer {unknown[0]!r}; choose from {', '.join(PEERS)}")
    return peers


def supports(peer: str, language: str) -> bool:
    return language in (KOKORO_ONNX_LANG if peer == "kokoro-onnx" else PIPER_LANGUAGES)


_MODULES = {"kokoro-onnx": "kokoro_onnx", "piper-tts": "piper"}  # what each peer's venv must import


def check_python(python: Path, peers: Sequence[str] = ()) -> None:
    """The peers venv must exist and hold each of ``peers``; say how to build it when it does not, before
    any sentence is spoken (a peer failing after voxserve's scores would lose them)."""
    build = "run 'make peers-venv' in the voxserve checkout (it builds .venv-peers there) and pass its python"
    if not python.is_file() or not os.access(python, os.X_OK):
        raise InvalidInput(f"no peers Python at {python}; {build} with --peers-python")
    modules = [_MODULES[p] for p in peers]
    if modules:
        probe = "import importlib.util, sys; print([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None])"
        done = subprocess.run([str(python), "-c", probe, *modules], capture_output=True, text=True, timeout=60)
        missing = done.stdout.strip() if done.returncode == 0 else f"(it does not run: {done.stderr[-200:]})"
        if missing != "[]":
            raise InvalidInput(f"the peers Python at {python} lacks {missing}; {build} with --peers-python")


def _run(command: Sequence[str], stdin: str | None = None) -> None:
    done = subprocess.run(list(command), input=stdin, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} {' '.join(command[1:3])} failed ({done.returncode}): {done.stderr[-2000:]}")


def kokoro_onnx(python: Path, store: ModelStore, items: Sequence[tuple[str, str, str, bool]]) -> list[PeerAudio]:
    """``kokoro-onnx`` over ``items`` of (text or phonemes, voice, espeak language, is_phonemes)."""
    voices = {voice: str(store.kokoro_voice(voice)) for _, voice, _, _ in items}
    with tempfile.TemporaryDirectory(prefix="voxserve-peer-") as tmp:
        job = {
            "model": str(store.kokoro_model()),
            "voices": voices,
            "out": tmp,
            "items": [{"text": t, "voice": v, "lang": lang, "is_phonemes": ph} for t, v, lang, ph in items],
        }
        job_path = Path(tmp) / "job.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        _run([str(python), str(Path(__file__).with_name("peer_kokoro_onnx.py")), str(job_path)])
        return [PeerAudio(np.load(Path(tmp) / f"{i}.npy"), 24_000) for i in range(len(items))]


def piper_tts(python: Path, store: ModelStore, texts: Sequence[str]) -> list[PeerAudio]:
    """``piper-tts``'s command line over ``texts``, one WAV file per line (named by a rising clock)."""
    with tempfile.TemporaryDirectory(prefix="voxserve-peer-") as tmp:
        model, config = store.piper_model(), store.piper_config()
        lines = "".join(" ".join(text.split()) + "\n" for text in texts)
        _run([str(python), "-m", "piper", "-m", str(model), "-c", str(config), "-d", tmp], stdin=lines)
        files = sorted(Path(tmp).glob("*.wav"), key=lambda p: int(p.stem))
        if len(files) != len(texts):
            raise RuntimeError(f"piper-tts wrote {len(files)} files for {len(texts)} sentences")
        return [_read_wav(path) for path in files]


def _read_wav(path: Path) -> PeerAudio:
    with wave.open(str(path), "rb") as wav:
        if wav.getsampwidth() != 2 or wav.getnchannels() != 1:
            raise RuntimeError(f"{path.name}: expected 16-bit mono")
        data = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2")
        return PeerAudio(data.astype(np.float32) / 32768.0, wav.getframerate())


def versions(python: Path, names: Sequence[str]) -> dict[str, str]:
    """The installed version of each peer in the peers venv, for the report."""
    script = "import sys, importlib.metadata as m; print(' '.join(m.version(n) for n in sys.argv[1:]))"
    done = subprocess.run([str(python), "-c", script, *names], capture_output=True, text=True, timeout=60, check=False)
    found = done.stdout.split() if done.returncode == 0 else []
    return dict(zip(names, found, strict=False))
