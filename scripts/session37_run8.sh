#!/usr/bin/env bash
# Session 37, device run 8 (main's final csrc): every other test file and benchmarks/tests, then compute-sanitizer:
# racecheck and memcheck over the tiled dequantize's fp16 / bf16 cases (its stmatrix row tiles), memcheck over every
# kernel's small cases (scripts/sanitize_cases.py cuda).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn|cuda_format|kernel_resources)\.py")
timeout 330 python3 -m pytest $files benchmarks/tests -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -20 | cut -c1-300
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 python3 scripts/sanitize_cases.py cuda dequant-tiled \
  > $R/racecheck-dequant.log 2>&1; echo "racecheck dequant rc=$?"; tail -2 $R/racecheck-dequant.log | cut -c1-300
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_cases.py cuda dequant-tiled \
  > $R/memcheck-dequant.log 2>&1; echo "memcheck dequant rc=$?"; tail -2 $R/memcheck-dequant.log | cut -c1-300
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_cases.py cuda \
  > $R/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -3 $R/memcheck.log | cut -c1-300
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
