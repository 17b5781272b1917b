#!/usr/bin/env bash
# Session 42, device run 8 (the final csrc, 11b29d0's build; the tests at 8a816bf): test_cuda_gemm.py whole.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; start_device_run || exit 1
timeout 300 python3 -m pytest tests/test_cuda_gemm.py -q > $OUT/tests-gemm.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
