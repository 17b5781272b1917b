#!/usr/bin/env bash
# Session 57, device run 3 (the final kernels): the whole GPU suite in two calls on one warm machine.
# PART=a: tests/test_cuda_gemm.py and benchmarks/tests; PART=b: every other test file (other_test_files).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
if [ "${PART:-a}" = a ]; then
  timeout 560 python3 -m pytest -q tests/test_cuda_gemm.py benchmarks/tests > $OUT/tests-gemm.log 2>&1
  echo "tests gemm rc=$?"; tail -3 $OUT/tests-gemm.log | cut -c1-300
else
  timeout 560 python3 -m pytest -q $(other_test_files) > $OUT/tests-other.log 2>&1
  echo "tests other rc=$?"; tail -3 $OUT/tests-other.log | cut -c1-300
fi
