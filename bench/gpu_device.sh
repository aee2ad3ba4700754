#!/usr/bin/env bash
# On a lent GPU machine, once every part of .gpu-kit has been carried there (docs/gpu.md): unpack the
# kit, build the float16 split graphs, check that the CUDA provider loads, then run bench/gpu_check.sh
# with and without cross-stream batching. Everything it prints also goes to $OUT (the device tool
# brings it back), with the first stream's audio for a fidelity check on the CPU. Stdlib, numpy, onnx
# and PyTorch only: what the device image has.
#   STEP=probe bench/gpu_device.sh    # unpack, build, load the provider; no benchmark (~1 min)
set -euo pipefail
cd "$(dirname "$0")/.."
KIT="${KIT:-/tmp/voxserve-kit}"
RESULTS="${OUT:-bench/results/gpu}"
PY="${PYTHON:-python3}"
mkdir -p "$RESULTS"
exec > >(tee -a "$RESULTS/gpu_device.log") 2>&1
date -u
[ -d "$KIT/site/onnxruntime" ] || "$PY" -m bench.gpu_kit unpack --dest "$KIT"
export PYTHONPATH="$KIT/site:src:."
GRAPHS="$KIT/kokoro/split-fp16"
if [ ! -f "$GRAPHS/kokoro_split.json" ]; then
  # the device's onnx may serialize differently from the one that recorded the known hashes. The device
  # has neither pydantic nor cryptography, which the package's __init__ (the model store) and sealed
  # models import; building plain graphs needs neither, so both modules are stood in for here.
  "$PY" -c "import sys, types; from pathlib import Path; \
pkg = types.ModuleType('voxserve.models'); pkg.__path__ = ['src/voxserve/models']; sys.modules[pkg.__name__] = pkg; \
sealed = types.ModuleType('voxserve.models.sealed'); sealed.SUFFIX = '.vxenc'; sealed.ModelKey = object; \
sealed.open_sealed = sealed.write_sealed = None; sys.modules[sealed.__name__] = sealed; \
from voxserve.models.graphs import build_split_graphs; \
build_split_graphs(Path('$KIT/kokoro/kokoro-v1.0.int8.onnx'), Path('$GRAPHS'), precision='fp16', verify_hashes=False)"
fi
"$PY" - "$GRAPHS" <<'PROBE'
import sys, time
import torch  # loads the CUDA 13 libraries that onnxruntime-gpu's CUDA provider links against
import onnxruntime as ort
print("onnxruntime", ort.__version__, ort.__file__, ort.get_available_providers())
print("torch", torch.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))
from voxserve.engines.onnx import SessionFactory
t0 = time.perf_counter()
session = SessionFactory(["cuda"]).create(sys.argv[1] + "/kokoro_decoder.onnx")
print("decoder session on", session.get_providers(), f"in {time.perf_counter() - t0:.1f} s")
if session.get_providers()[0] != "CUDAExecutionProvider":
    sys.exit("the CUDA provider did not load: see the messages above")
PROBE
[ "${STEP:-all}" = probe ] && exit 0
common=(MODEL="$KIT/kokoro/kokoro-v1.0.int8.onnx" VOICES="$KIT/kokoro/voices" GRAPHS="$GRAPHS"
  PROVIDERS=cuda PRELOAD_TORCH=1 PYTHON="$PY")
env "${common[@]}" BATCH="${BATCH:-64}" SAVE_AUDIO="$RESULTS/gpu_first_stream.wav" bench/gpu_check.sh \
  | tee "$RESULTS/gpu_check_batched.jsonl"
env "${common[@]}" BATCH=1 LEVELS="${UNBATCHED_LEVELS:-1,16,64}" bench/gpu_check.sh \
  | tee "$RESULTS/gpu_check_unbatched.jsonl"
date -u
