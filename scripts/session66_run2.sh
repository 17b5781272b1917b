#!/usr/bin/env bash
# Session 66, run 2: the dense decode GEMV's warps per unit on K of 14 and 20 groups (run 1: 2 warps a unit 11% faster
# on 152064 x 3584 and x resident at 2 warps 22% faster on 151936 x 5120 at M = 4, where the rule runs x staged):
# Qwen2.5-7B's and Qwen3-14B / 32B's layer and lm_head shapes at M = 1, 2, 4, the rule against x resident forced at
# 2 / 4 / 8 warps per unit, k = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 420 python3 scripts/probe_gemv_launch.py \
  --shapes 4608x3584,3584x3584,37888x3584,3584x18944,152064x3584,7168x5120,5120x5120,34816x5120,5120x17408,151936x5120,10240x5120,5120x8192,51200x5120,5120x25600 \
  --ms 1,2,4 --settings "1,1:1:2:0:8:2,1:1:2:0:8:4,1:1:2:0:8:8" --reps 3 --out $OUT/warps > $OUT/warps.log 2>&1
echo "warps rc=$?"; grep -E "^\|" $OUT/warps.log | cut -c1-200
