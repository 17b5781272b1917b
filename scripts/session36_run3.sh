#!/usr/bin/env bash
# Session 36, device run 3 (the build of run 2): every other test file and benchmarks/tests, then the wgmma kernel's
# split cases under compute-sanitizer (memcheck; the TMA path's first sanitizer run).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn|cuda_format)\.py")
timeout 330 python3 -m pytest $files benchmarks/tests -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -20 | cut -c1-300
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 python3 scripts/sanitize_cases.py cuda wgmma-splits \
  > $R/sanitize.log 2>&1; echo "sanitize rc=$?"; tail -5 $R/sanitize.log | cut -c1-300
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
