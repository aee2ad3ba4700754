#!/usr/bin/env bash
# One-shot GPU check (issue 4): TTFA and aggregate real-time factor at 1/16/64/256 concurrent Kokoro
# streams, in under 8 minutes. Needs onnxruntime with the CUDA (or TensorRT) provider and the model files:
#   MODEL=path/kokoro-v1.0.int8.onnx VOICES=path/voices GRAPHS=path/split-fp16 BATCH=64 bench/gpu_check.sh
# (build the graphs first: voxserve models fetch, then VOXSERVE_PRECISION=fp16 voxserve models fetch, or
#  python -c 'from voxserve.models.graphs import build_split_graphs; ...'; BATCH=1 measures without batching)
# Without a GPU provider it measures the CPU path (and says so in its first line).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${VOXSERVE_CACHE_DIR:-$HOME/.cache/voxserve}"
MODEL="${MODEL:-$CACHE/kokoro/kokoro-v1.0.int8.onnx}"
VOICES="${VOICES:-$CACHE/kokoro/voices}"
GRAPHS="${GRAPHS:-$CACHE/kokoro/split-fp16}"
PY="${PYTHON:-python3}"
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
timeout 470 "$PY" -m bench.gpu_check --model "$MODEL" --voices "$VOICES" --graphs "$GRAPHS" \
  --levels "${LEVELS:-1,16,64,256}" --workers "${WORKERS:-16}" --batch "${BATCH:-64}" \
  --providers "${PROVIDERS:-auto}" ${PRELOAD_TORCH:+--preload-torch} \
  ${SAVE_AUDIO:+--save-audio "$SAVE_AUDIO"}
