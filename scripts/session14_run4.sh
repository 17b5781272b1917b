#!/usr/bin/env bash
# Session 14, device run 4: no grouped L2 prefetch; the warps-per-unit tuning aid. Tests (GEMV / grouped /
# PDL / opcheck subset); warps per unit 8 / 4 / 2 on Qwen3 MoE gate/up (8, 64, 256 experts x 1);
# the mma decode against the shuffle decode on MoE down at 64 / 256 experts (per-CTA schedule, unit
# slots); the MoE rows of benchmarks.run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s14; start_device_run || exit 1
timeout 170 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py tests/test_dependent_launch.py -q --maxfail=10 \
  -k "gemv or grouped or launch_plan or tuning_aids" > $LOGS/tests.log 2>&1; tail -2 $LOGS/tests.log
timeout 90 python3 scripts/probe_grouped_schedule.py --shapes moe_gu --experts 8,64,256 --per-expert 1 --reps 2 \
  --settings 2:0:8:0,2:0:8:4,2:0:8:2 --out $LOGS/probe-gu > $LOGS/probe-gu.log 2>&1; grep "^|" $LOGS/probe-gu.log
timeout 120 python3 scripts/probe_grouped_schedule.py --shapes moe_dn --experts 8,64,256 --per-expert 1,4 --reps 2 \
  --decodes auto,mma --settings 2:0:8:0,2:0:8:1 --out $LOGS/probe-dn > $LOGS/probe-dn.log 2>&1
grep "^|" $LOGS/probe-dn.log
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes moe_gu,moe_dn --ms 1,2,4,8,16 --out /tmp/rm > $LOGS/moe.log 2>&1
grep "^| moe" /tmp/rm/*/results-full.md | head -12
cp $LOGS/tests.log $LOGS/probe-gu.log $LOGS/probe-dn.log $OUT/ 2>/dev/null
cp $LOGS/probe-gu/grouped-schedule.json $OUT/probe-gu.json; cp $LOGS/probe-dn/grouped-schedule.json $OUT/probe-dn.json
cp /tmp/rm/*/results-full.md $OUT/results-moe.md; cp /tmp/rm/*/results-full.json $OUT/results-moe.json
