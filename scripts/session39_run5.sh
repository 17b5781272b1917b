#!/usr/bin/env bash
# Session 39, device run 5 (5fba5f8's csrc: the row scale scaled where the sums take it), against earlier runs of the
# same commands (the working tree cannot carry a second build): run 4's 2-against-3-stages probe (64 / 512 x 8), run
# 3's MoE sweep, session 37 run 7's kbit.gemm sweep (k = 4, M = 1-64) and session 37 run 2's M = 1 at k = 2-5; the
# x-shared, plan and split tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,moe_dn --experts 64,512 --per-expert 8 \
  --settings 2:1,2:1:8:0:1:3 --reps 5 --out $R/stages > $OUT/stages.log 2>&1
echo "stages rc=$?"; grep "^| moe" $OUT/stages.log
timeout 90 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,512 --sweep-ms 1,4,8 --out $R/moe > $OUT/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
cp $R/moe/*/results-full.md $OUT/moe-results-full.md 2>/dev/null
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,32,64 --ks 4 --out $R/gemm-k4 > $OUT/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py s39=$R/gemm-k4 --path gemm > $OUT/gemm-k4-table.md; cp $R/gemm-k4/ab-*.json $OUT/gemm-k4.json
timeout 60 python3 -m benchmarks.ab_paths --ops gemm --shapes llama70b_gu,llama8b_gu,glm_shared_gu,gateup --ms 1 \
  --ks 2,3,4,5 --out $R/m1 > $OUT/m1.log 2>&1; echo "m1 rc=$?"; cp $R/m1/ab-*.json $OUT/gemm-m1.json
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan or split" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
