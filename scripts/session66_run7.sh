#!/usr/bin/env bash
# Session 66, run 7: session 66's decode rule at k = 2, 3, 5 (the build of then: kbit._C._set_gemv_decode_path_rule(2),
# a measurement value since dropped, applied the k = 4 rule at every k, 8 warps per unit and one row included) against
# the default (there session 37's) on the shapes where it changed k = 4's plans, M = 1, 2, 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for k in 2 3 5; do
  timeout 180 python3 scripts/probe_gemv_launch.py --k $k \
    --shapes llama70b_gu,28672x4096,57344x4096,128256x4096,37888x3584,152064x3584,10240x5120,34816x5120,151936x5120,57344x8192,151936x2048 \
    --ms 1,2,4 --settings "1,1:1:1:0:8:0:-1:1:-1:0:2" --reps 3 --out $OUT/k$k > $OUT/k$k.log 2>&1
  echo "k=$k rc=$?"; grep -E "^\|" $OUT/k$k.log | cut -c1-200
done
