#!/usr/bin/env bash
# Session 30, device run 5 (carried build: main's, as run 4): the GPU test files run 4 did not run (the whole suite
# but test_cuda_gemm, dependent launch, nn, block) and benchmarks/tests; racecheck on the wgmma cluster cases (the
# predicated stage release; it took longer than run 4's 60 s).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s30; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
files=$(ls tests/test_*.py | grep -vE "test_(cuda_gemm|dependent_launch|nn|block|kernel_resources)\.py")
timeout 330 python3 -m pytest $files benchmarks/tests -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda wgmma-splits \
  > $R/sanitize_racecheck.log 2>&1
echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|sanitize_cases' $R/sanitize_racecheck.log | tail -2 | tr '\n' ' ')"
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
