#!/usr/bin/env bash
# Session 66, run 11 (the final build): kbit.gemm (its dispatch) against the GEMV's rule and cuBLAS fp16 at 1, 4 and 8
# rows on the shapes session 66's rule changed (the probe's baselines now under the default settings; run 10's gemm
# column was not), k = 4; memcheck on the GEMV's slot and layout cases and the gated cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 scripts/probe_gemv_launch.py \
  --shapes llama8b_gu,28672x4096,57344x8192,37888x3584,152064x3584,10240x5120,34816x5120,151936x5120,7168x5120 \
  --ms 1,4,8 --settings "1" --baselines gemm,fp16 --reps 3 --out $OUT/ops > $OUT/ops.log 2>&1
echo "ops rc=$?"; grep -E "^\|" $OUT/ops.log | cut -c1-200
SAN_TAIL=2 sanitize_run memcheck 120 gemv-slots
SAN_TAIL=2 sanitize_run memcheck 90 gated-gemv
