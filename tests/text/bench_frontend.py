"""Cold construction time, resident memory and warm phonemize time of each language's G2P.

Run: .venv/bin/python tests/text/bench_frontend.py   (each language cold in a fresh process)
Compare two trees: PYTHONPATH=<tree>/src .venv/bin/python tests/text/bench_frontend.py

Memory is the anonymous resident memory the G2P adds (after glibc returns freed heap, ``malloc_trim``);
a language that shares another's parts (Mandarin reads its Latin words with the American English G2P)
counts them too. The warm time is the median of 20 calls on a short reply and on five of them.
"""

from __future__ import annotations

import ctypes
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def anonymous_mb() -> float:
    ctypes.CDLL(None).malloc_trim(0)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def warm_ms(phonemize: Callable[[], object]) -> float:
    phonemize()
    runs = []
    for _ in range(20):
        t = time.perf_counter()
        phonemize()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs) * 1000


def measure(lang: str, alphabet: Alphabet) -> dict[str, float]:
    from voxserve.settings import Settings
    from voxserve.text import Frontend

    frontend = Frontend(Settings(_env_file=None, cache_dir=Path(tempfile.mkdtemp())))
    before = anonymous_mb()
    t0 = time.perf_counter()
    frontend.warm([lang], alphabet)
    cold = time.perf_counter() - t0
    memory = anonymous_mb() - before
    longer = " ".join([SHORT[lang]] * 5)
    return {
        "cold_s": cold,
        "mb": memory,
        "warm_ms": warm_ms(lambda: frontend.phonemize(SHORT[lang], lang, alphabet)),
        "warm5_ms": warm_ms(lambda: frontend.phonemize(longer, lang, alphabet)),
    }


def main() -> None:
    if len(sys.argv) == 3:
        print(json.dumps(measure(sys.argv[1], cast(Alphabet, sys.argv[2]))))
        return
    jobs = [(lang, "misaki") for lang in SHORT] + [("en-us", "espeak")]
    print(f"{'lang':7} {'alphabet':8} {'cold (s, incl. imports)':>24} {'MB':>6} {'warm (ms)':>10} {'five (ms)':>10}")
    for lang, alphabet in jobs:
        out = subprocess.run([sys.executable, __file__, lang, alphabet], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{lang:7} {alphabet:8} {r['cold_s']:24.2f} {r['mb']:6.0f} {r['warm_ms']:10.2f} {r['warm5_ms']:10.2f}")


if __name__ == "__main__":
    main()
