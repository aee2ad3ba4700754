"""Helpers shared by the stream tests."""

from __future__ import annotations

import numpy as np

from voxserve.runtime import Runtime
from voxserve.types import SynthesisParams


async def speak(runtime: Runtime, text: str, voice: str = "af_heart") -> np.ndarray:
    """All audio of one unpaced session speaking ``text``."""
    session = runtime.open_session(SynthesisParams(voice=voice), pace=False)
    session.push_text(text)
    session.close()
    return np.concatenate([chunk.samples async for chunk in session])
