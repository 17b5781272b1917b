#!/usr/bin/env bash
# Session 19, device run 14 (carried build of 61c93b4): every GPU test file but test_cuda_gemm.py
# (run 13); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s19; R=$LOGS/r14; mkdir -p $R; start_device_run || exit 1
timeout 400 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py > $R/tests-rest.log 2>&1; tail -2 $R/tests-rest.log
tar -czf $OUT/run14.tar.gz -C $R .
