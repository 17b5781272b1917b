#!/usr/bin/env bash
# Session 16, device run 2 (carried build): dense x-resident CTAs of several unit slots. The probe A/B
# (rule with one unit slot per CTA, 1:1:1:0:1, against the rule with slots, 1:1:1:0:8; fp16 / wgmma /
# tile beside) at M = 8-64, then tests/test_cuda_gemm.py whole; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r2; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 scripts/probe_gemv_launch.py --shapes Q,gateup,O,down,KV,llama8b_gu --ms 8,16,24,32,48,64 \
  --settings 1:1:1:0:1,1:1:1:0:8 --reps 2 --baselines fp16,wgmma,tile --out $R/probe > $R/probe.log 2>&1; grep "^|" $R/probe.log
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
tar -czf $OUT/run2.tar.gz -C $R .; cp $R/tests-cuda-gemm.log $R/probe.log $OUT/
