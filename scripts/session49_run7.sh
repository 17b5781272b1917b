#!/usr/bin/env bash
# Session 49, device run 7 (the first of two calls on one warm machine): run 3's bulk-copy y tile again (e704541's
# wgmma_gemm.cuh and bulk_copy.cuh over the final csrc, uncommitted), its persistent and y-tile tests, then the build
# copied to ab_new/ for run 8.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 100 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma_gemm_persistent or y_tile" \
  > $OUT/tests-wgmma.log 2>&1; echo "tests rc=$?"; tail -1 $OUT/tests-wgmma.log
