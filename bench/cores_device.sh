#!/usr/bin/env bash
# Listeners served at 2, 4, 8 and 16 cores of one bigger machine (issue 15's scaling), each count of
# cores taken with `taskset` (one thread per physical core first, hyperthread siblings last), the
# server's own runtime and a real Piper engine in-process (bench/simulate_cores.py --real): first the
# saturation throughput (unpaced requests at once), then a lone listener, then real-time listeners at
# half, two thirds and four fifths of that saturation, arriving within 2 s. Prints JSON lines, also to
# $OUT (the device tool brings them back) or bench/results/cores.
#   CORES="2 4 8 16" PYTHON=python3 bash bench/cores_device.sh
#
# On a lent GPU machine (Python 3.12, no registry; its image lacks most of voxserve's dependencies), as
# done at stop 40 (docs/benchmarks.md, "Listeners at 2, 4, 8 and 16 real cores"):
#   here: pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 ...
#         each dependency the image lacks, into .whl1/ .whl2/ .whl3/ (each under ~60 MiB, ignored by git),
#         and copy the Piper voice (en_US-joe-medium.onnx and .onnx.json) into .devmodel/piper/
#   there, one call per folder: pip install -q --no-index --no-deps --target /tmp/site .whlN/*.whl
#   there, carrying .devmodel in the same call (a folder carried earlier does not stay):
#     PYTHONPATH=/tmp/site:src:. VOXSERVE_CACHE_DIR=$PWD/.devmodel PYTHON=python3 bash bench/cores_device.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS="${OUT:-bench/results/cores}"
PY="${PYTHON:-.venv/bin/python}"
mkdir -p "$RESULTS"
exec > >(tee -a "$RESULTS/cores_device.log") 2>&1
date -u
grep -m1 "model name" /proc/cpuinfo
echo "logical CPUs: $(nproc), threads per core: $(lscpu 2>/dev/null | awk -F: '/per core/ {print $2}' | xargs)"
echo "flags: $(grep -o 'avx512_vnni\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
# logical CPUs ordered so that each physical core's first thread comes before any second thread
if command -v lscpu >/dev/null; then
  order=$(lscpu -p=CPU,CORE,SOCKET | grep -v '^#' | awk -F, '{n[$3","$2]++; print n[$3","$2], $1}' |
    sort -k1,1n -k2,2n | awk '{print $2}' | paste -sd, -)
else
  order=$(seq -s, 0 $(($(nproc) - 1)))
fi
echo "cpu order: $order"
for n in ${CORES:-2 4 8 16}; do
  cpus=$(echo "$order" | cut -d, -f1-"$n")
  echo "== $n cores: cpus $cpus"
  timeout "${LIMIT_S:-150}" taskset -c "$cpus" "$PY" -m bench.simulate_cores --engine piper --real --rounds 1 \
    --levels 1 --saturation "$((8 * n)),$((16 * n))" --of-saturation "${FRACTIONS:-0.5,0.65,0.8}" |
    sed "s/^{/{\"taskset_cores\": $n, /" | tee "$RESULTS/cores_$n.jsonl" || echo "== $n cores: stopped after ${LIMIT_S:-150} s"
done
date -u
