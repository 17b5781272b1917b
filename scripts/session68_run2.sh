#!/usr/bin/env bash
# Session 68, run 2: the GEMV's k = 5 split pair table (gemv_k5_table.cuh) on the GPU: the dispatch sweep at M = 1-128
# (benchmarks.tune_dispatch, every path, every k; the GEMV's range, which the table re-derives) on the three lm_head
# shapes (whose run 1 sweep, on the one-copy table, is the A/B's base; k = 2-4, whose code did not change, the control)
# and on the table's nine shapes; then test_cuda_gemm.py whole. Everything but the console lands in one archive,
# $OUT/run2.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
R=$(pwd)/r2; mkdir -p $R
MS=1,2,4,8,16,24,32,33,48,64,96,128
for s in qwen3_lm_head llama8b_lm_head qwen25_7b_lm_head; do tune_sweep $R $s 60 --shapes $s --ms $MS; done
tune_sweep $R table 200 --ms $MS
for s in qwen3_lm_head llama8b_lm_head qwen25_7b_lm_head; do
  echo "== $s: $(grep -o '"max_gemv_m": {[^}]*}' $R/$s.log | head -1)"; done
timeout 300 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $R/tests.log | tail -12 | cut -c1-300
tar -C $R -cJf $OUT/run2.tar.xz .
