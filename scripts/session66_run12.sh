#!/usr/bin/env bash
# Session 66, run 12 (the final build): test_cuda_gemm.py whole (every GEMM path, the plan tests).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 380 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py -x > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -12 | cut -c1-400
