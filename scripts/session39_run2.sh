#!/usr/bin/env bash
# Session 39, device run 2 (1b7e46c's csrc): the grouped GEMV's CTA shape and ring stages with x shared, k = 4, against
# the rule: Qwen3 and GLM MoE gate/up and down, 16-512 experts x 8 rows (64 x 4 too; GLM at 64 x 4 and 8). Run 1 had 64 x 8 gate/up at 17.08
# us with 2 stages against the rule's 3 (18.19), and 32 x 8 at 11.24 with 4 against 13.74. Each setting's launch plan
# is printed under its row (warps / per unit / stages / x shared / CTAs per SM / grid).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
SET=2:1,2:1:8:0:1:2,2:1:8:0:1:3,2:1:8:0:1:4,2:1:8:0:2,2:1:8:0:2:2,2:1:8:0:2:4,2:1:8:1,2:1:8:1:1:2,2:1:8:0:0
timeout 280 python3 scripts/probe_grouped_schedule.py --k 4 --shapes moe_gu,moe_dn --experts 16,32,64,128,512 \
  --per-expert 8 --settings $SET --reps 3 --out $R/qwen8 > $OUT/qwen8.log 2>&1
echo "qwen8 rc=$?"; grep "^| " $OUT/qwen8.log
timeout 150 python3 scripts/probe_grouped_schedule.py --k 4 --shapes glm_moe_gu,glm_moe_dn,moe_gu,moe_dn --experts 64 \
  --per-expert 4,8 --settings $SET --reps 3 --out $R/x4 > $OUT/x4.log 2>&1
echo "x4 rc=$?"; grep "^| " $OUT/x4.log
