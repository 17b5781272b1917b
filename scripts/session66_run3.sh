#!/usr/bin/env bash
# Session 66, run 3: the M = 1 decode GEMV, x staged against x resident at 2 / 4 / 8 warps per unit (run 2: on K =
# 5120 the rule's x staged beat x resident at 4 warps; on K = 3584 x resident at 2 warps beat the rule's 4, staged not
# timed), on many-tile shapes of K = 2048-8192, k = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 400 python3 scripts/probe_gemv_launch.py \
  --shapes 37888x3584,152064x3584,28672x4096,57344x4096,128256x4096,34816x5120,51200x5120,151936x5120,57344x8192,65536x2048,151936x2048 \
  --ms 1 --settings "1,1:1:0,1:1:2:0:8:2,1:1:2:0:8:4,1:1:2:0:8:8" --reps 3 --out $OUT/m1 > $OUT/m1.log 2>&1
echo "m1 rc=$?"; grep -E "^\|" $OUT/m1.log | cut -c1-200
