#!/usr/bin/env bash
# Session 28, device run 8 (carried build, run 7's: the same sources): run 7's tests stopped at the first failure
# (test_gemv_staged_layout_plan forced the wide layout on the 8B size at M = 2-4, which the decode rule now runs
# x resident; the layout tests now set x staged). The GPU test files the change reaches, all of them; then
# compute-sanitizer memcheck and racecheck on the GEMV's unit-slot and layout cases (x resident at 2-3 rows, unit
# slots of 3 stages, the wide table).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
timeout 330 python3 -m pytest tests/test_cuda_gemm.py tests/test_large_tensors.py tests/test_dependent_launch.py \
  tests/test_nn.py tests/test_block.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
for tool in memcheck racecheck; do
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-slots \
    > $R/sanitize_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize_$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
