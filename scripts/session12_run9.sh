#!/usr/bin/env bash
# Session 12, device runs 9-10: the whole GPU suite on the final tree, in two halves (PART=1:
# tests/test_cuda_gemm.py; PART=2: every other test file).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
if [ "${PART:-1}" = 1 ]; then
  timeout 380 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -rs 2>&1 | tee $OUT/gpu-suite-final-part1.log | tail -3
else
  timeout 420 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py 2>&1 | tee $OUT/gpu-suite-final-part2.log | tail -3
fi
