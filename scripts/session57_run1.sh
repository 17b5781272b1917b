#!/usr/bin/env bash
# Session 57, device run 1 (main's kernels, session 56's final build): the fallback in row chunks, sequential and on two
# streams (scripts/probe_fallback_chunks.py, k = 4, fp16, sustained, cold), against the op and cuBLAS; then
# compute-sanitizer memcheck and racecheck on kbit.Experts' glue kernels (now launched with PDL: not sanitized in
# session 56).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 240 python3 scripts/probe_fallback_chunks.py --shapes llama8b_gu,Q,down,gateup,O,llama70b_gu \
  --ms 1024,2048,4096 --chunks 1024,2048,4096 --par 2048,4096 --json $OUT/chunks.json > $OUT/chunks.log 2>&1
echo "chunks rc=$?"; grep -v Warning $OUT/chunks.log | cut -c1-400
sanitize_run memcheck 150 moe-glue
sanitize_run racecheck 150 moe-glue
