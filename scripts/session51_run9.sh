#!/usr/bin/env bash
# Session 51, device run 9, on the final csrc (the CTAs a GPU runs at once now one helper in gemm_cuda.cpp, host
# code): the wgmma plan, rule, token-chunk and persistent tests and the dispatch tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py \
  -k "wgmma_launch_plan or wgmma_persistent or wgmma_forced_token or split_tail_rule or row_tiles or dispatch or prefill" \
  > $OUT/tests-plan.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-plan.log | head -8 | cut -c1-300
