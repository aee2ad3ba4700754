#!/bin/bash
# The same load against a server pinned to one core and against one on every core, one after the other:
# how on-time throughput grows with cores on this machine.
#   bash bench/cores.sh [OUTPUT_DIR]
set -euo pipefail
out=${1:-bench-cores}
port=8798
for cores in 1 all; do
  if [ "$cores" = 1 ]; then pin=(taskset -c 0); threads=1; else pin=(); threads=0; fi
  VOXSERVE_RATE_LIMIT_PER_MINUTE=0 VOXSERVE_INTRA_OP_THREADS=$threads "${pin[@]}" \
    .venv/bin/voxserve serve --host 127.0.0.1 --port $port --grpc-port $((port + 50000)) >"$out-server-$cores.log" 2>&1 &
  server=$!
  for _ in $(seq 120); do curl -sf "localhost:$port/readyz" >/dev/null && break; sleep 1; done
  .venv/bin/voxserve bench --url "http://127.0.0.1:$port" --voice en_US-joe-medium --concurrency 4,8,16 \
    --duration 15 --output "$out/piper-$cores" | grep -E '^\s+(level|c=)' | sed "s/^/cores=$cores /"
  .venv/bin/voxserve bench --url "http://127.0.0.1:$port" --voice af_heart --concurrency 1,2,3 \
    --duration 15 --output "$out/kokoro-$cores" | grep -E '^\s+(level|c=)' | sed "s/^/cores=$cores /"
  kill "$server"
  wait "$server" || true
done
