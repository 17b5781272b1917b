#!/usr/bin/env bash
# Session 66, run 9: the GEMV at 5-16 rows (8 and 16 token slots) on the shapes session 66's 1-4-row rule changed and
# the Llama-3 ones: the rule against x staged and x resident at 2 / 4 / 8 warps per unit, M = 8, 16, k = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 scripts/probe_gemv_launch.py \
  --shapes llama8b_gu,llama70b_gu,28672x4096,57344x8192,37888x3584,152064x3584,10240x5120,34816x5120,151936x5120,4608x3584,7168x5120 \
  --ms 8,16 --settings "1,1:1:0,1:1:2:0:8:2,1:1:2:0:8:4,1:1:2:0:8:8" --reps 3 --out $OUT/m8 > $OUT/m8.log 2>&1
echo "m8 rc=$?"; grep -E "^\|" $OUT/m8.log | cut -c1-200
