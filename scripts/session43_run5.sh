#!/usr/bin/env bash
# Session 43, device run 5 (the review's mends: comments in csrc, a test of the rule's own split tail, the tuner's bf16
# end clamped): test_cuda_gemm.py whole and benchmarks/tests on the final build.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 330 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
