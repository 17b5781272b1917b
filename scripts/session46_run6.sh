#!/usr/bin/env bash
# Session 46, device run 6 (right after run 5, the same build): every other test file; the MoE decode sweep (8 / 64 /
# 256 / 512 experts x 1 / 4 / 8 rows, k = 4, fp16, against fp16 bmm; session 41 run 3's command) for the record.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 330 python3 -m pytest $(other_test_files) -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
R=/tmp/r6; mkdir -p $R
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256,512 --sweep-ms 1,4,8 --out $R/moe > $OUT/moe.log 2>&1
echo "moe rc=$?"
sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
cp $R/moe/*/results-full.md $OUT/moe-results-full.md 2>/dev/null
cp $R/moe/*/results-full.json $OUT/moe-results-full.json 2>/dev/null
