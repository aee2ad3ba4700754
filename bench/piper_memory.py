"""Resident memory of Piper voices loaded from MODEL_PATH: the server's runtime, then one voice after another.

    python -m bench.piper_memory --voices 3

The voices are joe's graph under other names (made in a temporary folder), loaded the way requests
load them (split graphs for windowed decoding, at every thread count the pool uses).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import psutil

from voxserve.models import ModelStore
from voxserve.runtime import Runtime
from voxserve.settings import Settings


def make_voices(folder: Path, store: ModelStore, count: int) -> list[str]:
    names = []
    for i in range(count):
        name = f"en_GB-memory{i}-medium"
        config = json.loads(store.piper_config().read_text())
        config["language"] = {"code": "en_GB"}
        (folder / f"{name}.onnx").symlink_to(store.piper_model())
        (folder / f"{name}.onnx.json").write_text(json.dumps(config))
        names.append(name)
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--voices", type=int, default=3)
    args = parser.parse_args()
    process = psutil.Process()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        settings = Settings(engines=["piper"], model_path=folder, warm_languages=["none"])
        names = make_voices(folder, ModelStore(settings), args.voices)
        runtime = Runtime(settings)
        runtime.load(warm=False)
        library = runtime.piper_library
        assert library is not None
        base = process.memory_info().rss
        print(f"runtime (joe + frontend) loaded: RSS {base >> 20} MB")
        for name in names:
            engine = library.engines[name]
            for _ in engine.stream("həlˈoʊ ðˈɛɹ", name, first_window_s=0.4):
                pass
            rss = process.memory_info().rss
            counted = library.loaded_bytes >> 20
            print(
                f"+ {name}: RSS {rss >> 20} MB (+{(rss - base) >> 20} MB over the runtime); library counts {counted} MB"
            )
        runtime.close()


if __name__ == "__main__":
    main()
