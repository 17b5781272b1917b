#!/usr/bin/env bash
# Session 39, device run 8 (main's final csrc, 28edfcf's): the GPU suite, every test file and benchmarks/tests, in two
# pytest calls; logs straight into $OUT (a timeout keeps what finished).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; mkdir -p $OUT; start_device_run || exit 1
timeout 265 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py tests/test_dependent_launch.py \
  tests/test_nn.py tests/test_cuda_format.py -q > $OUT/tests-a.log 2>&1
echo "tests-a rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-a.log | head -12 | cut -c1-300
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn|cuda_format|kernel_resources)\.py")
timeout 240 python3 -m pytest $files benchmarks/tests -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
