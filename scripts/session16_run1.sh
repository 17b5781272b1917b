#!/usr/bin/env bash
# Session 16, device run 1 (carried build of 2c09dbd's sources): the x-resident ring-depth test that
# session 15 added without a GPU, then the dispatch table's sweep with the 16-warp x-resident GEMV,
# then tests/test_cuda_gemm.py whole; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r1; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 -m pytest tests/test_cuda_gemm.py -q -k "ring_stages or launch_plan" > $R/tests-ring.log 2>&1; tail -3 $R/tests-ring.log
TUNE_TIMEOUT=290 timeout 300 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -1 $R/tune.log | cut -c1-200
timeout 170 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -3 $R/tests-cuda-gemm.log
tar -czf $OUT/run1.tar.gz -C $R .; cp $R/tests-*.log $OUT/; cp $R/tune/tc_dispatch_table.h $OUT/ 2>/dev/null
