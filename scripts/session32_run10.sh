#!/usr/bin/env bash
# Session 32, device run 10 (carried build: main's, as run 9): compute-sanitizer memcheck and racecheck on the wgmma cluster
# cases (scripts/sanitize_cases.py cuda wgmma-splits: now with one split's y tile, x peers and all stages at the start).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s32; R=$LOGS/r${RUN:-10}; mkdir -p $R; start_device_run || exit 1
for tool in memcheck racecheck; do
  timeout $([ $tool = memcheck ] && echo 110 || echo 170) compute-sanitizer --tool $tool --error-exitcode 99 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize_$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
