#!/usr/bin/env bash
# Session 24, device run 7 (carried build, main's kernels = 5f5bec5's, stamp 0e988896): after the review's
# test refactor (check_chain shared by the chained-call tests): test_dependent_launch.py whole and the
# wgmma plan / aid / graph tests. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s24; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_dependent_launch.py tests/test_cuda_gemm.py -q --maxfail=10 \
  -k "dependent or see_weights or chained or wgmma_launch_plan or wgmma_aids or wgmma_gemm_graph" > $R/tests.log 2>&1
tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head -8
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
