#!/usr/bin/env bash
# Session 19, device run 15 (carried build: the review mends: the split reduction skips quads of rows
# past N, so every remote load feeds a store before the relaxed final cluster barrier; comments):
# the wgmma and dependent-launch tests, compute-sanitizer on the cluster cases; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s19; R=$LOGS/r15; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py -q --maxfail=20 -k "wgmma or dependent" > $R/tests-wgmma-pdl.log 2>&1; tail -1 $R/tests-wgmma-pdl.log
for tool in memcheck racecheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 --num-cuda-barriers 100000 \
    python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize-wgmma-$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run15.tar.gz -C $R .
