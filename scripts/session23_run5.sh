#!/usr/bin/env bash
# Session 23, device run 5 (carried build, run 4's: the two-warpgroup wgmma shapes, run 3's table): every
# GPU test file but test_cuda_gemm.py (run 4: 6131 passed) and benchmarks/tests; racecheck and synccheck on
# the wgmma cluster cases (both CTA shapes); the dispatch table re-measured on a grid with M = 33 (the
# wgmma shape's change). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s23; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
mkdir -p $R/tune; timeout 200 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -1 $R/tune.log | cut -c1-200
for tool in racecheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/sanitize-wgmma-$tool.log | tr '\n' ' ')"
done
timeout 420 python3 -m pytest tests benchmarks/tests -q --maxfail=10 --ignore=tests/test_cuda_gemm.py \
  > $R/tests-rest.log 2>&1; tail -1 $R/tests-rest.log; grep -E "^(FAILED|ERROR)" $R/tests-rest.log | head -8
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
