#!/usr/bin/env bash
# Session 55, device run 5, on the final build (the merged H200 table): tests/test_cuda_gemm.py whole and
# benchmarks/tests; then every other test file (other_test_files) in what time is left.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 -m pytest -q tests/test_cuda_gemm.py benchmarks/tests > $OUT/tests-gemm.log 2>&1
echo "gemm tests rc=$?"; tail -2 $OUT/tests-gemm.log | cut -c1-200
timeout ${OTHER_LIMIT:-250} python3 -m pytest -q $(other_test_files) > $OUT/tests-other.log 2>&1
echo "other tests rc=$?"; tail -2 $OUT/tests-other.log | cut -c1-200
