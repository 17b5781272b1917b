#!/usr/bin/env bash
# Session 14, device run 2: the grouped GEMV's per-warp schedule with static first chunks (T >= E: the
# first codes copied before the offsets are read; an exact L2 prefetch) under the GEMV / grouped /
# PDL / opcheck tests; the schedule forms' A/B (scripts/probe_grouped_schedule.py; Qwen3 MoE down also
# with the mma decode at 16 and 32 experts) and tune_grouped at 8 / 16 experts.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s14; start_device_run || exit 1
timeout 170 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py tests/test_dependent_launch.py -q --maxfail=10 \
  -k "gemv or grouped" 2>&1 | tee $LOGS/tests.log | tail -2
timeout 100 python3 scripts/probe_grouped_schedule.py --shapes moe_gu --experts 8,16,32 --per-expert 1,4,8 --reps 2 \
  --out $LOGS/probe-gu > $LOGS/probe-gu.log 2>&1; grep "^|" $LOGS/probe-gu.log
timeout 100 python3 scripts/probe_grouped_schedule.py --shapes moe_dn --experts 8,16,32 --per-expert 1,4,8 --reps 2 \
  --decodes auto,mma --settings 0:1,1:1,2:1 --out $LOGS/probe-dn > $LOGS/probe-dn.log 2>&1; grep "^|" $LOGS/probe-dn.log
timeout 120 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,16 --per-expert 1,2,4,8,16 \
  --out $LOGS/grouped > $LOGS/grouped.log 2>&1; grep "^|" $LOGS/grouped/grouped-*.md | head -30
cp $LOGS/tests.log $LOGS/probe-gu.log $LOGS/probe-dn.log $OUT/ 2>/dev/null
cp $LOGS/probe-gu/grouped-schedule.json $OUT/probe-gu.json; cp $LOGS/probe-dn/grouped-schedule.json $OUT/probe-dn.json
cp $LOGS/grouped/grouped-*.json $LOGS/grouped/grouped-*.md $OUT/ 2>/dev/null
