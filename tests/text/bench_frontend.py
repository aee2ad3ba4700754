"""Cold construction time of each G2P and warm phonemize time per language.

Run: .venv/bin/python tests/text/bench_frontend.py   (each language cold in a fresh process)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

from voxserve.engines.base import Alphabet

SHORT = {
    "en-us": "Sure, I can help with that right now.",
    "en-gb": "Sure, I can help with that right now.",
    "zh": "好的，我现在就可以帮你。",
    "ja": "はい、今すぐお手伝いできます。",
    "fr": "Bien sûr, je peux vous aider tout de suite.",
    "es": "Claro, puedo ayudarte ahora mismo.",
    "it": "Certo, posso aiutarti subito.",
    "pt-br": "Claro, posso ajudar agora mesmo.",
    "hi": "ज़रूर, मैं अभी आपकी मदद कर सकता हूँ।",
    "ko": "물론이죠, 지금 바로 도와드릴게요.",
}


def measure(lang: str, alphabet: Alphabet) -> dict[str, float]:
    from voxserve.settings import Settings
    from voxserve.text import Frontend

    t0 = time.perf_counter()
    frontend = Frontend(Settings(_env_file=None, cache_dir=Path(tempfile.mkdtemp())))
    frontend.warm([lang], alphabet)
    cold = time.perf_counter() - t0
    frontend.phonemize(SHORT[lang], lang, alphabet)
    runs = []
    for _ in range(20):
        t = time.perf_counter()
        frontend.phonemize(SHORT[lang], lang, alphabet)
        runs.append(time.perf_counter() - t)
    return {"cold_s": cold, "warm_ms": statistics.median(runs) * 1000}


def main() -> None:
    if len(sys.argv) == 3:
        print(json.dumps(measure(sys.argv[1], cast(Alphabet, sys.argv[2]))))
        return
    jobs = [(lang, "misaki") for lang in SHORT] + [("en-us", "espeak")]
    print(f"{'lang':7} {'alphabet':8} {'cold (s, incl. imports)':>24} {'warm (ms)':>10}")
    for lang, alphabet in jobs:
        out = subprocess.run([sys.executable, __file__, lang, alphabet], capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{lang:7} {alphabet:8} {result['cold_s']:24.2f} {result['warm_ms']:10.2f}")


if __name__ == "__main__":
    main()
