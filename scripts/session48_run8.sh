#!/usr/bin/env bash
# Session 48, device run 8, on runs 5-9's build: every other test file, then kbit.gemm against cuBLAS fp16 at k = 2, 3,
# 5 on the x-resident shapes at M = 5-16 (session 47 run 7's command).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 330 python3 -m pytest $(other_test_files) -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
R=/tmp/r8; mkdir -p $R
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,gateup,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 5,8,12,16 --ks 2,3,5 --out $R/gemm-k235 > $OUT/gemm-k235.log 2>&1; echo "gemm-k235 rc=$?"
python3 scripts/ab_table.py s48=$R/gemm-k235 --path gemm > $OUT/gemm-k235-table.md
cp $R/gemm-k235/ab-*.json $OUT/gemm-k235.json
cat $OUT/gemm-k235-table.md
