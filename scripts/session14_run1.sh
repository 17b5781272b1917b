#!/usr/bin/env bash
# Session 14, device run 1: the grouped GEMV's per-warp schedule (E <= 32, mma decode) and the guessed
# first-tile L2 prefetch (T >= E) under the GEMV / grouped / PDL / opcheck tests, then their A/B on
# the Qwen3 MoE expert shapes (scripts/probe_grouped_schedule.py) and the MoE rows of benchmarks.run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s14; start_device_run || exit 1
timeout 170 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py tests/test_dependent_launch.py -q --maxfail=10 \
  -k "gemv or grouped" 2>&1 | tee $LOGS/tests.log | tail -2
timeout 150 python3 scripts/probe_grouped_schedule.py --experts 8,32 --per-expert 1,4 --reps 2 --out $LOGS/probe \
  > $LOGS/probe.log 2>&1; cat $LOGS/probe.log | tail -12
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes moe_gu,moe_dn --ms 1,2,4,8,16 --out /tmp/rm > $LOGS/moe.log 2>&1
grep "^| moe" /tmp/rm/*/results-full.md | head -12
cp $LOGS/tests.log $LOGS/probe.log $LOGS/probe/grouped-schedule.json $OUT/ 2>/dev/null
cp /tmp/rm/*/results-full.md $OUT/results-moe.md; cp /tmp/rm/*/results-full.json $OUT/results-moe.json
