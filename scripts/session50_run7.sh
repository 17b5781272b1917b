#!/usr/bin/env bash
# Session 50, device run 7, on a diagnostic build: d2a2b59's csrc + scripts/wgmma_trace_patch.py +
# scripts/wgmma_order_patch.py. The wgmma op in the benchmark's setting (cold L2, CUDA-graph medians, the rule's
# persistent CTAs) under the producers' three copy orders (0: a group's tiles with its x, as main's kernel; 1: x(J)
# then tiles(J + 1); 2: tiles(J + 1) then x(J), d2a2b59's), alternating in one process.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 400 python3 scripts/probe_wgmma_diag_bench.py --shapes Q,down,gateup,llama8b_gu --ms 128,256,512,1024,2048 \
  --diags 0,1,2 --rounds 2 --out $OUT/order-bench.json 2>&1 | tee $OUT/order-bench.log | grep -v "^ "
