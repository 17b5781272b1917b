#!/usr/bin/env bash
# Session 20, device run 8 (carried build of the final review mends: one dense prefetch block,
# GemvAcc::each_sum, one register-headroom constant; no behaviour change intended): the GEMV and grouped
# tests, memcheck on the grouped-schedule cases; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s20; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py -q --maxfail=20 -k "gemv or grouped or dependent" \
  > $R/tests-gemv-grouped.log 2>&1; tail -1 $R/tests-gemv-grouped.log
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda grouped-schedule \
  > $R/sanitize-grouped-memcheck.log 2>&1; echo "memcheck rc=$? $(grep -h "ERROR SUMMARY" $R/sanitize-grouped-memcheck.log)"
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
