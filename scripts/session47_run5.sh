#!/usr/bin/env bash
# Session 47, device run 5: the GEMV's session 47 rules as kept (the 16-slot one at k = 4, 5 only): the plan tests,
# then the dispatch sweep at M = 8 and 16 (every shape and k: the GEMV got faster there) for the H200 table's merge.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "gemv_launch_plan or x_resident_plan or decode_x_resident" \
  > $OUT/tests-plan.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/tests-plan.log
tune_sweep $OUT tune 300 --ms 8,16
tail -3 $OUT/tune.log | cut -c1-300
