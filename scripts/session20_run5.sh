#!/usr/bin/env bash
# Session 20, device run 5 (carried build of the review mends: the dense GEMV's new L2 hints only where
# the PDL prefetch rule allows; comments): test_cuda_gemm.py whole (with invalid offsets at E = 40), every
# sanitizer case once without a tool, compute-sanitizer on the grouped-schedule cases (now with invalid
# offsets); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s20; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -1 $R/tests-cuda-gemm.log
timeout 120 python3 scripts/sanitize_cases.py cuda > $R/sanitize-cases-plain.log 2>&1; echo "plain rc=$? $(tail -1 $R/sanitize-cases-plain.log)"
for tool in memcheck racecheck synccheck; do
  timeout 50 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda grouped-schedule > $R/sanitize-grouped-$tool.log 2>&1
  echo "$tool rc=$? $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|ran" $R/sanitize-grouped-$tool.log | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
