#!/usr/bin/env bash
# Session 18, device run 10 (carried build of main after the review mends: forced wgmma splits stepped
# down to a cluster the GPU runs on every path, cluster-occupancy errors other than a bad size
# raised, tests over bf16 and 32-token chunks): tests/test_cuda_gemm.py whole and memcheck on the
# wgmma cluster cases; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s18; R=$LOGS/r10; mkdir -p $R; start_device_run || exit 1
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 99 --num-cuda-barriers 100000 \
  python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|sanitize_cases' $R/sanitize-wgmma-memcheck.log | tail -2 | tr '\n' ' ')"
tar -czf $OUT/run10.tar.gz -C $R .
