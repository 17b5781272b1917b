#!/usr/bin/env bash
# Session 69, run 1: the split k = 5 pair table in every mma decode (pair_table.cuh: the small-M, tile and wgmma kernels
# too; the wgmma kernel's 160-token CTA keeps the one-copy table) on the GPU: the dispatch sweep at M = 1-128 on the
# table's nine shapes and the three lm_head shapes (benchmarks.tune_dispatch, every path, every k; session 68's run 2
# sweeps on the one-copy table are the base, k = 2-4, whose SASS did not change, the control), then test_cuda_gemm.py
# whole. Everything but the console lands in one archive, $OUT/run1.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
R=$(pwd)/r1; mkdir -p $R
table_sweeps $R 1,2,4,8,16,24,32,33,48,64,96,128
timeout 330 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $R/tests.log | tail -12 | cut -c1-300
tar -C $R -cJf $OUT/run1.tar.xz .
