#!/usr/bin/env bash
# Session 15, device run 5 (carried build, the final tree): the x-resident rule now also asks for more
# units than the staged launch's CTAs (x reused). Its choices against staged x at M = 8 / 16 / 32,
# then tests/test_cuda_gemm.py whole.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s15; R=$LOGS/r5; mkdir -p $R; start_device_run || exit 1
timeout 50 python3 scripts/probe_gemv_launch.py --shapes Q,O,gateup,down,llama8b_gu --ms 8,16,32 \
  --settings 1:1:0,1:1:1 --reps 2 --out $R/probe > $R/probe.log 2>&1; grep "^|" $R/probe.log
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
tar -czf $OUT/run5.tar.gz -C $R .; cp $R/tests-cuda-gemm.log $R/probe.log $OUT/
