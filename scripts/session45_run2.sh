#!/usr/bin/env bash
# Session 45, device run 2: the M = 1 GEMV's existing launch forms on the H200 today (probe_gemv_launch, cold, three
# rounds): the rule, warps per unit 2 / 4 / 8, x resident where it fits (ring stages 2 / 3 / 4), the unit-slot layout
# (3 / 4 stages), the wide table, the cluster split of 2; and Nsight Compute's stall samples per SASS line at 8B M = 1.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
S="1,1:1:1:0:8:2,1:1:1:0:8:4,1:1:1:0:8:8,1:1:2:2,1:1:2:3,1:1:2:4,1:1:1:0:8:0:-1:1:1:3,1:1:1:0:8:0:-1:1:1:4"
S="$S,1:1:1:0:8:0:-1:1:2,1:1:1:0:8:0:2"
timeout 240 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q,down --ms 1 --settings "$S" \
  --reps 3 --out $OUT > $OUT/launch.log 2>&1; echo "launch rc=$?"; grep -E "^\|" $OUT/launch.log | cut -c1-250
SOURCE=1 STALLS=1 KERNEL=scalar_gemv SHAPES="8b_m1: --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096" \
  timeout 200 bash scripts/ncu_gemm.sh > $OUT/ncu.log 2>&1; echo "ncu rc=$?"; cat $OUT/ncu.log | cut -c1-160 | head -60
