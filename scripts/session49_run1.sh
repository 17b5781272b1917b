#!/usr/bin/env bash
# Session 49, device run 1, on main's build (4eb82e2's csrc): would the dequantize + cuBLAS fallback gain from
# N-chunks whose dequantized rows stay in L2? (scripts/probe_dequant_chunks.py, emulated with the existing ops.)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 scripts/probe_dequant_chunks.py --shapes Q,gateup,down,llama8b_gu --ms 1536,2048,4096 \
  --chunks 2,4,8 > $OUT/chunks.log 2>&1; echo "chunks rc=$?"
cat $OUT/chunks.log | grep -v Warn | cut -c1-400
