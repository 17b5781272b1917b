#!/usr/bin/env bash
# Session 69, run 2: the final rule (k = 5's split pair table in wgmma CTAs of up to 80 tokens, the one-copy table from
# 96) on the GPU: the dispatch sweep at M = 1-128 on the table's nine shapes and the three lm_head shapes (for the
# table's merge); test_cuda_gemm.py -k wgmma (the CTAs of 96-160 tokens, k = 5 among them, back on the one-copy
# table); racecheck and memcheck on the k = 5 pair-table cases (sanitize_cases.py pair-table-k5). Everything but the
# console lands in one archive, $OUT/run2.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
R=$(pwd)/r2; mkdir -p $R
table_sweeps $R 1,2,4,8,16,24,32,33,48,64,96,128
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py -k wgmma > $R/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $R/tests-wgmma.log | tail -6 | cut -c1-300
OUT=$R SAN_TAIL=2 sanitize_run racecheck 120 pair-table-k5
OUT=$R SAN_TAIL=2 sanitize_run memcheck 60 pair-table-k5
tar -C $R -cJf $OUT/run2.tar.xz .
