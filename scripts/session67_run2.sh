#!/usr/bin/env bash
# Session 67, run 2: the dispatch sweep (benchmarks.tune_dispatch, every path, every k, M = 1-128) on three lm_head
# shapes, one sweep a shape (their sizes are past the H200 table's largest row, Llama-3 70B's, whose crossovers they
# take: at 8 rows the wgmma kernel where the GEMV measured 8-13% faster, session 66 run 10); and the plan tests with
# session 67's added shapes.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r2; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 -m pytest -q -rs -p no:cacheprovider tests/test_cuda_gemm.py -k "by_path or x_resident_plan" \
  > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -6 | cut -c1-400
echo "start $(date +%T)"
for s in qwen3_lm_head llama8b_lm_head qwen25_7b_lm_head; do
  tune_sweep $R $s 170 --shapes $s --ms 1,2,4,8,16,24,32,33,48,64,96,128
  for f in $R/$s/*.json $R/$s/*.md; do [ -f "$f" ] && cp "$f" $OUT/$s-$(basename $f); done
  cp $R/$s.log $OUT/ 2>/dev/null
done
