#!/usr/bin/env bash
# Session 39, device run 7 (28edfcf's csrc): do the dense x-resident GEMV's rings also run as fast with 2 stages as with
# the resident chooser's (runs 2-5: 2 stages won wherever x was shared)? The rule against 2, 3 and 4 stages
# (kbit._C._set_gemv_resident_stages) at M = 2-16 on the Llama-3 and Qwen3 / GLM dense shapes, k = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,Q,gateup,down,glm_shared_gu \
  --ms 2,4,8,16 --settings 1,1:1:1:2,1:1:1:3,1:1:1:4 --reps 3 --out $R/xres > $OUT/xres.log 2>&1
echo "xres rc=$?"; grep "^|" $OUT/xres.log; cp $R/xres/gemv-launch.json $OUT/xres.json
