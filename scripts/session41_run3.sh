#!/usr/bin/env bash
# Session 41, device run 3 (the final csrc): the MoE decode sweep (8 / 64 / 256 / 512 experts x 1 / 4 / 8 rows, k = 4,
# fp16, against fp16 bmm) for the record; the 1-row cells (#5's 256 x 1) under the warps-per-unit aid (the rule / 1 /
# 2 warps); test_cuda_gemm.py whole (logs straight into $OUT; a timeout keeps what finished).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,256,512 --sweep-ms 1,4,8 --out $R/moe > $R/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
cp $R/moe/*/results-full.md $OUT/moe-results-full.md 2>/dev/null; cp $R/moe/*/results-full.json $OUT/moe-results-full.json 2>/dev/null
timeout 90 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,moe_dn --experts 64,256 --per-expert 1 \
  --settings 2:1,2:1:8:1,2:1:8:2 --reps 3 --out $R/w1 > $OUT/probe-w1.log 2>&1
echo "probe w1 rc=$?"; grep "^| " $OUT/probe-w1.log
timeout 330 python3 -m pytest tests/test_cuda_gemm.py -q > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
