#!/usr/bin/env bash
# Session 39, device run 3: the x-shared chooser of this commit (2 stages; 8- or 16-warp CTAs by the most units an SM
# runs, and the step to one warp per unit against those CTAs' busy slots). The x-shared and plan tests; the probe on
# the cells the rule moved (Qwen3 MoE gate/up 20-40 x 8, down 6-16 x 8, k = 2 and 4, GLM) against 2 warps per unit
# (W = 2, the rule before there) and 3 stages; then the MoE sweep of record (k = 4, against fp16 bmm).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -k "shared_x or launch_plan" -q > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
SET=2:1,2:1:8:2,2:1:8:0:1:3,2:1:8:1:2
for k in 4 2; do
  timeout 120 python3 scripts/probe_grouped_schedule.py --k $k --shapes moe_gu --experts 16,20,24,28,32,36,40 \
    --per-expert 8 --settings $SET --reps 3 --out $R/gu-k$k > $OUT/gu-k$k.log 2>&1
  echo "gu k=$k rc=$?"; grep "^| " $OUT/gu-k$k.log
done
timeout 100 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_dn --experts 4,6,8,12,16 \
  --per-expert 8 --settings $SET --reps 3 --out $R/dn-k4 > $OUT/dn-k4.log 2>&1
echo "dn rc=$?"; grep "^| " $OUT/dn-k4.log
timeout 100 python3 scripts/probe_grouped_schedule.py --k 4 --shapes glm_moe_gu,glm_moe_dn --experts 8,12,16 \
  --per-expert 8 --settings $SET --reps 3 --out $R/glm-k4 > $OUT/glm-k4.log 2>&1
echo "glm rc=$?"; grep "^| " $OUT/glm-k4.log
timeout 90 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 --kernels kbit,fp16 \
  --shapes moe_gu,moe_dn --ms 1 --sweep-experts 8,64,512 --sweep-ms 1,4,8 --out $R/moe > $OUT/moe.log 2>&1
echo "moe rc=$?"; sed -n '/MoE sweep.*cold/,/MoE sweep.*hot/p' $R/moe/*/results-full.md | grep "^| moe" | cut -d'|' -f2-7 | tr -s ' '
cp $R/moe/*/results-full.md $OUT/moe-results-full.md 2>/dev/null
