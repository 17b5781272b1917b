#!/usr/bin/env bash
# Session 50, device run 4, on the diagnostic build of run 1 (main's csrc + scripts/wgmma_trace_patch.py +
# scripts/wgmma_diag_patch.py): the wgmma op in the benchmark's setting (cold L2, CUDA-graph medians, the rule's
# persistent CTAs) under diag modes 0 (as main), 2 (no waits for data after the first stages), 7 (x alone copied,
# waited for), 8 (the weight tiles alone), 9 (the tiles prefetched to L2 two groups ahead), alternating in one process.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 400 python3 scripts/probe_wgmma_diag_bench.py --shapes Q,down,gateup,llama8b_gu --ms 64,256,512,1024,2048 \
  --diags 0,2,7,8,9 --rounds 2 --out $OUT/diag-bench.json 2>&1 | tee $OUT/diag-bench.log | grep -v "^ "
