"""Runs the ``kokoro-onnx`` library over a list of sentences; started by :mod:`voxserve.evaluation.peers`
with the peers venv's Python (``python peer_kokoro_onnx.py JOB.json``), never imported by voxserve.

``kokoro-onnx`` pins ``phonemizer``, which shares its import name with the ``phonemizer-fork`` voxserve
uses, so it lives in a venv of its own and this script talks to voxserve through files only: the job
names the model, the voice files (voxserve's raw float32 tables, gathered here into the ``.npz`` the
library loads) and the sentences; each sentence's audio is written as ``<index>.npy`` (float32, 24 kHz).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from kokoro_onnx import Kokoro  # type: ignore[import-not-found,unused-ignore]

VOICE_SHAPE = (510, 1, 256)


def main(job_path: str) -> None:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    out = Path(job["out"])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        voices = Path(tmp) / "voices.npz"
        tables = {
            name: np.fromfile(path, dtype=np.float32).reshape(VOICE_SHAPE) for name, path in job["voices"].items()
        }
        np.savez(voices, **tables)  # type: ignore[arg-type]
        kokoro = Kokoro(job["model"], str(voices))
        for index, item in enumerate(job["items"]):
            audio, rate = kokoro.create(
                item["text"], voice=item["voice"], lang=item["lang"], is_phonemes=item.get("is_phonemes", False)
            )
            np.save(out / f"{index}.npy", np.asarray(audio, dtype=np.float32))
            print(json.dumps({"index": index, "sample_rate": rate}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
