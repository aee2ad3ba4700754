"""Mandarin text normalization: numbers, dates, times, units and symbols into Chinese words."""

from __future__ import annotations

import re

from misaki.zh_normalization import TextNormalizer

HAN_CLASS = r"\u3400-\u4dbf\u4e00-\u9fff"
_HAN_RE = re.compile(f"[{HAN_CLASS}]")
# Latin words are left to the English G2P: misaki's unit rules would rewrite letters inside them.
_LATIN_RUN = re.compile(r"((?<!°)[A-Za-z]+(?:['’\-][A-Za-z]+)*)")


class ChineseNormalizer:
    """Wraps misaki's ``TextNormalizer`` (a port of PaddleSpeech's rules); one per G2P."""

    def __init__(self) -> None:
        self._normalizer = TextNormalizer()

    def __call__(self, text: str) -> str:
        parts = _LATIN_RUN.split(text)
        out: list[str] = []
        for i, part in enumerate(parts):
            if i % 2 == 1 or not part.strip():
                out.append(part)
                continue
            lead = " " if part[:1].isspace() else ""
            trail = " " if part[-1:].isspace() else ""
            out.append(lead + self._normalizer.normalize_sentence(part.strip()) + trail)
        return re.sub(r"\s+", " ", "".join(out)).strip()


def has_han(text: str) -> bool:
    return _HAN_RE.search(text) is not None
