#!/usr/bin/env bash
# Session 50, device run 1, on a diagnostic build: main's csrc patched by scripts/wgmma_trace_patch.py and then
# scripts/wgmma_diag_patch.py (results wrong in diag modes 1-4 and 6-8; timing only). Per-CTA traces (one unit a CTA)
# of the 128 x 128 wgmma kernel under each diag mode: whether a group's ~20% over the resident-data step rate is the
# copies' arrival, their traffic into shared memory, or neither. By default Qwen3 Q (8 groups a unit), Llama-3 8B
# gate/up (16) and Qwen3 gate/up at M = 512 / 1024, modes 0-5 then 0 again (SHAPES, MS, DIAGS override).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 240 python3 scripts/probe_wgmma_trace.py --shapes ${SHAPES:-Q,llama8b_gu,gateup} --ms ${MS:-512,1024} --diags ${DIAGS:-0,1,2,3,4,5,0} \
  --out $OUT/trace.json > $OUT/trace.log 2>&1; echo "trace rc=$?"
grep -E "^==|group[0-9] |last_group|total|y_stores" $OUT/trace.log | cut -c1-240
