#!/usr/bin/env bash
# Session 33, device run 6 (carried build: main a311e42, whose csrc is session 32's dea784a): the dispatch table
# re-measured with the kernels of sessions 31-32 (benchmarks.tune_dispatch; the table was session 30's), then compute-sanitizer racecheck on two
# of the wgmma cluster cases (sanitize_cases.py cuda wgmma-splits 0,3: M = 40 at both CTA shapes, M = 130 with one
# split's y tile; 1-8 splits, staged / image with and without PDL / x peers / all stages at the start).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s33; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 230 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1
echo "tune rc=$?"; tail -3 $R/tune.log | cut -c1-300
timeout 250 compute-sanitizer --tool racecheck --error-exitcode 99 \
  python3 scripts/sanitize_cases.py cuda wgmma-splits 0,3 > $R/sanitize_racecheck.log 2>&1
echo "racecheck rc=$?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|sanitize_cases' $R/sanitize_racecheck.log | tail -2 | tr '\n' ' ')"
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
