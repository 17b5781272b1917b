#!/usr/bin/env bash
# Session 15, device run 4 (carried build): x-resident CTAs of up to 16 warps (one per SM, sharing one
# pair table and x image) with 2-4 ring stages (the most that keep the CTAs per SM). The A/B (staged
# 1:1:0, the rule 1:1:1, resident wherever it fits 1:1:2) at M = 1-32, then tests/test_cuda_gemm.py.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s15; R=$LOGS/r4; mkdir -p $R; start_device_run || exit 1
timeout 110 python3 scripts/probe_gemv_launch.py --shapes Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,2,4,8,16,32 \
  --settings 1:1:0,1:1:1,1:1:2 --reps 2 --out $R/probe > $R/probe.log 2>&1; grep "^|" $R/probe.log
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
tar -czf $OUT/run4.tar.gz -C $R .; cp $R/tests-cuda-gemm.log $R/probe.log $OUT/
