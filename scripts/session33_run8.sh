#!/usr/bin/env bash
# Session 33, device run 8 (the run 7 build): every other test file and benchmarks/tests, with test_block and
# test_kernel_resources again (run 7's tests reached 99% of its files, no failure, before its timeout), then compute-sanitizer
# racecheck on the other two wgmma cluster cases (sanitize_cases.py cuda wgmma-splits 1,2: M = 5, 16-token chunks;
# M = 100 at both CTA shapes; run 6 took 0 and 3).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s33; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn)\.py")
timeout 330 python3 -m pytest $files benchmarks/tests -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
timeout 170 compute-sanitizer --tool racecheck --error-exitcode 99 \
  python3 scripts/sanitize_cases.py cuda wgmma-splits 1,2 > $R/sanitize_racecheck.log 2>&1
echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|sanitize_cases' $R/sanitize_racecheck.log | tail -2 | tr '\n' ' ')"
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
