#!/usr/bin/env bash
# Session 18, device run 8 (carried build of 3adbc89): the whole GPU suite; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r8; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 340 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1; tail -2 $R/tests-rest.log
tar -czf $OUT/run8.tar.gz -C $R .
