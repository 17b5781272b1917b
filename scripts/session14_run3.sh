#!/usr/bin/env bash
# Session 14, device run 3: unit slots (mma-decode GEMV CTAs of several small-K units, e.g. 4 x 2 warps
# at K = 512) and the offsets load issued before the static first chunk's codes, under the GEMV /
# grouped / PDL / opcheck tests; their A/B (probe_grouped_schedule.py), tune_grouped for the
# dispatch rule, and the MoE rows of benchmarks.run.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s14; start_device_run || exit 1
timeout 170 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py tests/test_dependent_launch.py -q --maxfail=10 \
  -k "gemv or grouped or launch_plan or tuning_aids" 2>&1 | tee $LOGS/tests.log | tail -2
timeout 60 python3 scripts/probe_grouped_schedule.py --shapes moe_gu --experts 8,16,32 --per-expert 1,4 --reps 2 \
  --settings 1:1,2:0,2:1 --out $LOGS/probe-gu > $LOGS/probe-gu.log 2>&1; grep "^|" $LOGS/probe-gu.log
timeout 100 python3 scripts/probe_grouped_schedule.py --shapes moe_dn --experts 8,16,32 --per-expert 1,4,8 --reps 2 \
  --decodes auto,mma --settings 1:1:1,2:1:1,1:1:8,2:1:8 --out $LOGS/probe-dn > $LOGS/probe-dn.log 2>&1
grep "^|" $LOGS/probe-dn.log
timeout 150 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,16,64,256 --per-expert 1,2,4,8 \
  --out $LOGS/grouped > $LOGS/grouped.log 2>&1; grep "^|" $LOGS/grouped/grouped-*.md | head -40
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes moe_gu,moe_dn --ms 1,2,4,8,16 --out /tmp/rm > $LOGS/moe.log 2>&1
grep "^| moe" /tmp/rm/*/results-full.md | head -12
cp $LOGS/tests.log $LOGS/probe-gu.log $LOGS/probe-dn.log $OUT/ 2>/dev/null
cp $LOGS/probe-gu/grouped-schedule.json $OUT/probe-gu.json; cp $LOGS/probe-dn/grouped-schedule.json $OUT/probe-dn.json
cp $LOGS/grouped/grouped-*.json $LOGS/grouped/grouped-*.md $OUT/ 2>/dev/null
cp /tmp/rm/*/results-full.md $OUT/results-moe.md; cp /tmp/rm/*/results-full.json $OUT/results-moe.json
