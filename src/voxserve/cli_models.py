"""``voxserve models``: list, fetch and build the model cache, fetch Piper catalog voices, encrypt it."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from voxserve.errors import InvalidInput, VoxError
from voxserve.settings import Settings

if TYPE_CHECKING:
    from voxserve.models import ModelStore


def _fetch_piper_voices(settings: Settings, action: str, names: list[str]) -> int:
    """``voxserve models fetch piper:<voice> …``: catalog voices into MODEL_PATH (else the cache)."""
    from voxserve.models.piper_catalog import FETCHED_DIR, fetch_voice, hub_download

    if action != "fetch":
        raise VoxError("name voices only with 'fetch' (voxserve models fetch piper:de_DE-thorsten-medium)")
    root = Path(settings.model_path).expanduser() if settings.model_path else settings.cache_dir / FETCHED_DIR
    for name in names:
        family, _, voice = name.partition(":")
        if family != "piper" or not voice:
            raise VoxError(f"{name!r}: name a Piper catalog voice as piper:<voice>, e.g. piper:de_DE-thorsten-medium")
        files = fetch_voice(voice, root, hub_download)
        print(f"installed {files.voice_id}: {files.model}")
    return 0


def cmd_models(args: argparse.Namespace, settings: Settings) -> int:
    """``voxserve models list | fetch | encrypt``."""
    from voxserve.models import ModelStore, format_listing

    if args.names:
        return _fetch_piper_voices(settings, args.action, args.names)
    store = ModelStore(settings)
    if args.action == "encrypt":
        return _encrypt_models(store, args)
    from voxserve.engines.cpus import usable_cores
    from voxserve.engines.onnx import resolve_providers
    from voxserve.models.split_cache import precision_record, resolve_precision, split_builder

    on_gpu = resolve_providers(settings.providers)[0] != "CPUExecutionProvider"
    precision = resolve_precision(settings.precision, on_gpu, usable_cores(), precision_record(store))
    store.builders.append(split_builder(precision))
    if args.action == "fetch":
        files = store.fetch(force=args.force, progress=not args.quiet)
        total = sum(1 for f in store.installed() if f.ok)
        done = f"installed {len(files)} files" if files else "nothing to install"
        print(f"{done}; {total} model files verified in {store.root}")
        if "kokoro" in settings.engines and not args.no_learn:
            _learn_voices(settings, quiet=args.quiet)
    else:
        print(format_listing(store.installed()))
    return 0


def _encrypt_models(store: ModelStore, args: argparse.Namespace) -> int:
    """Seal every ONNX graph of the cache (whole models and split graphs) with the key in ``--key-file``
    and remove the plain files; the server then needs that key (docs/security.md)."""
    from voxserve.models.sealed import ModelKey, seal_tree

    if not args.key_file:
        raise InvalidInput("models encrypt needs --key-file (add --generate-key to create a new key there)")
    key_file = Path(args.key_file).expanduser()
    if args.generate_key:
        try:
            ModelKey.generate().write(key_file)
        except FileExistsError:
            raise InvalidInput(f"{key_file} exists; --generate-key never overwrites a key") from None
    key = ModelKey.from_file(key_file)
    sealed = seal_tree(store.root, key)
    print(f"sealed {len(sealed)} model files in {store.root} with key id {key.key_id.hex()}")
    print(f"serve them with VOXSERVE_MODEL_KEY_FILE={key_file}")
    return 0


def _learn_voices(settings: Settings, quiet: bool) -> None:
    """Part of the model build: windowed Kokoro learns every voice's decoder statistics once (saved
    with the split graphs; it takes minutes), so that no server start pays for it."""
    from voxserve.runtime import Runtime

    runtime = Runtime(settings.model_copy(update={"engines": ["kokoro"]}))
    try:
        runtime.load(warm=False)  # loads what an earlier build saved, if it still fits
        t0 = time.perf_counter()
        runtime.learn_voices()
        if not quiet:
            print(f"voice statistics ready in {time.perf_counter() - t0:.1f} s")
    finally:
        runtime.close()
