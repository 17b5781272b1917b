#!/usr/bin/env bash
# Session 66, run 10: at 8 and 16 rows, what kbit.gemm takes (its dispatch) and its time, against the GEMV under the
# rule and x resident at 2 / 4 warps per unit, the wgmma kernel and cuBLAS fp16 (run 9: on K = 5120 at 16 rows the
# GEMV's rule runs x staged in one 8-warp CTA an SM, 26-35% slower than x resident at 2 or 4 warps a unit), k = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 scripts/probe_gemv_launch.py \
  --shapes llama8b_gu,llama70b_gu,28672x4096,37888x3584,152064x3584,10240x5120,34816x5120,151936x5120,7168x5120,5120x5120 \
  --ms 8,16 --settings "1,1:1:2:0:8:2,1:1:2:0:8:4" --baselines gemm,wgmma,fp16 --reps 3 --out $OUT/m16 > $OUT/m16.log 2>&1
echo "m16 rc=$?"; grep -E "^\|" $OUT/m16.log | cut -c1-220
