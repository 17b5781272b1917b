#!/usr/bin/env bash
# Session 25, device run 9 (carried build after the review mends: the pair-table load volatile, the table's
# tiled range past M = 128 wgmma's only, the prefill test asserting the path): the wgmma, tile, dispatch and
# prefill tests of test_cuda_gemm.py, test_dependent_launch.py and benchmarks/tests. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s25; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
timeout 300 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py benchmarks/tests -q --maxfail=10 \
  -k "wgmma or tile or dispatch or prefill or kernel_any_m or dependent or see_weights or chained or tune" > $R/tests.log 2>&1
tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head -8
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
