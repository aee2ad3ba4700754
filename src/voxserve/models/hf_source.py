"""Model files from the Hugging Face Hub, for users whose machines can reach it.

Needs the optional dependency ``huggingface_hub`` (``pip install 'voxserve[hf]'``), imported only
when this source is actually asked for files.

Kokoro's int8 model comes from ``onnx-community/Kokoro-82M-v1.0-ONNX`` (``onnx/model_quantized.onnx``).
That is a different export from the kokoro-onnx file the manifest pins (its inputs are named
``input_ids``/``style``/``speed`` and its output ``waveform``), so its hash cannot match. We accept it
as the known variant ``onnx-community`` after checking its structure and renaming its ports to ours
(:mod:`voxserve.models.kokoro_variant`). The store then records the resulting file's sha256 as the
accepted hash for that cache entry, so later corruption is still detected. Voices and the
Piper files are checked against the manifest hashes like any other source.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from voxserve.errors import ModelError
from voxserve.models.fileio import sha256_file
from voxserve.models.kokoro_variant import adopt_kokoro_variant
from voxserve.models.manifest import KOKORO_MODEL_PATH, PIPER_CONFIG_PATH, PIPER_MODEL_PATH, ModelFile
from voxserve.models.source_base import SourceResult, StagedFile

log = logging.getLogger(__name__)

KOKORO_REPO = "onnx-community/Kokoro-82M-v1.0-ONNX"
KOKORO_REPO_MODEL = "onnx/model_quantized.onnx"
KOKORO_VARIANT = "onnx-community"
PIPER_REPO = "rhasspy/piper-voices"
PIPER_REPO_FILES = {
    PIPER_MODEL_PATH: "en/en_US/joe/medium/en_US-joe-medium.onnx",
    PIPER_CONFIG_PATH: "en/en_US/joe/medium/en_US-joe-medium.onnx.json",
}

Downloader = Callable[..., str]


def load_downloader() -> Downloader:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError as exc:
        raise ModelError(
            "the Hugging Face source needs the huggingface_hub package: pip install 'voxserve[hf]'"
        ) from exc
    return hf_hub_download


class HuggingFaceSource:
    """Downloads from the Hub with ``hf_hub_download`` (its own cache/auth/proxy settings apply)."""

    name = "hf"

    def __repr__(self) -> str:
        return "HuggingFaceSource()"

    def remote(self, item: ModelFile) -> tuple[str, str]:
        """(repo id, file path in the repo) for a manifest file."""
        if item.relpath == KOKORO_MODEL_PATH:
            return KOKORO_REPO, KOKORO_REPO_MODEL
        if item.kind == "voice":
            return KOKORO_REPO, f"voices/{item.filename}"
        return PIPER_REPO, PIPER_REPO_FILES[item.relpath]

    def provide(self, files: Sequence[ModelFile], staging: Path, *, progress: bool) -> SourceResult:
        download = load_downloader()
        result = SourceResult()
        scratch = staging / ".hf"
        for item in files:
            repo, remote = self.remote(item)
            try:
                fetched = Path(download(repo_id=repo, filename=remote, local_dir=str(scratch)))
            except (OSError, ValueError) as exc:  # HfHubHTTPError and friends are OSErrors
                result.problems[item.relpath] = f"{repo}/{remote}: {type(exc).__name__}: {exc}"
                continue
            target = staging / item.relpath
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(fetched), str(target))
                sha = sha256_file(target)
            except OSError as exc:
                result.problems[item.relpath] = f"{repo}/{remote}: could not stage the download: {exc}"
                continue
            variant = None
            if item.relpath == KOKORO_MODEL_PATH and sha != item.sha256:
                problem = adopt_kokoro_variant(target)
                if problem is not None:
                    result.problems[item.relpath] = f"{repo}/{remote}: {problem}"
                    continue
                sha = sha256_file(target)  # its ports were renamed to ours
                variant = KOKORO_VARIANT
                log.info("accepting %s/%s as Kokoro variant %r (sha256 %s)", repo, remote, variant, sha)
            result.staged[item.relpath] = StagedFile(target, sha, target.stat().st_size, variant)
        return result
