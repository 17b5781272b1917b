#!/usr/bin/env bash
# Session 50, device run 10, on main's build (e59c17f2: the csrc of session 49's final main, which session 50 leaves
# unchanged): test_cuda_gemm.py whole and benchmarks/tests, then every other test file, the slowest first, in what is
# left of the call (gpu_build.sh's other_test_files; a timeout loses the quick files' results).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 320 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
timeout 230 python3 -m pytest $(other_test_files) -q > $OUT/tests-other.log 2>&1
echo "tests-other rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-other.log | head -12 | cut -c1-300
tail -3 $OUT/tests-other.log | cut -c1-300
