#!/usr/bin/env bash
# Session 14, device run 5 (the budget's last): grouped mma launches halve the warps per unit while the
# units fill the GPU, decode='auto' is the mma decode everywhere, grouped_gemv_wins re-measured. The
# new rule's cases (gate/up 256 x 1 with 1 vs 2 warps per unit; down 16 / 32 experts), tune_grouped,
# benchmarks.run (Qwen3 / Llama-3 8B dense at M = 1 and 16, MoE at M = 1-16), then
# tests/test_cuda_gemm.py whole and the other files that reach the GEMM ops.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s14; start_device_run || exit 1
R=/tmp/s14/records; mkdir -p $R  # packed into $OUT/run5.tar.gz at the end (the device returns few files)
timeout 40 python3 scripts/probe_grouped_schedule.py --shapes moe_gu --experts 256 --per-expert 1 --reps 2 \
  --settings 2:0:8:0,2:0:8:2 --out $LOGS/probe-gu > $LOGS/probe-gu.log 2>&1; grep "^|" $LOGS/probe-gu.log
timeout 40 python3 scripts/probe_grouped_schedule.py --shapes moe_dn --experts 16,32 --per-expert 1,8 --reps 2 \
  --settings 2:0 --out $LOGS/probe-dn > $LOGS/probe-dn.log 2>&1; grep "^|" $LOGS/probe-dn.log
timeout 90 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,64,256 --per-expert 1,4,16 \
  --out $LOGS/grouped > $LOGS/grouped.log 2>&1; grep "^|" $LOGS/grouped/grouped-*.md | grep -v -- "---" | head -30
timeout 40 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes moe_gu,moe_dn --ms 1,2,4,8,16 --out /tmp/rm > $LOGS/run.log 2>&1
grep "^| moe" /tmp/rm/*/results-full.md | head -12
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,llama8b_gu --ms 1,16 --out /tmp/rd > $LOGS/run-dense.log 2>&1
grep "^| Q \|^| KV\|^| O \|^| gateup\|^| down\|^| llama" /tmp/rd/*/results-full.md | head -14
cp $LOGS/probe-gu.log $LOGS/probe-dn.log $R/ 2>/dev/null
cp $LOGS/probe-gu/grouped-schedule.json $R/probe-gu.json; cp $LOGS/probe-dn/grouped-schedule.json $R/probe-dn.json
cp $LOGS/grouped/grouped-*.json $R/grouped.json; cp $LOGS/grouped/grouped-*.md $R/grouped.md
cp /tmp/rm/*/results-full.md $R/results-moe.md; cp /tmp/rm/*/results-full.json $R/results-moe.json
cp /tmp/rd/*/results-full.md $R/results-dense.md; cp /tmp/rd/*/results-full.json $R/results-dense.json
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
timeout 170 python3 -m pytest tests/test_nn.py tests/test_block.py tests/test_dependent_launch.py tests/test_opcheck.py \
  tests/test_api.py tests/test_integration_transformers.py tests/test_fuzz.py tests/test_bad_input.py tests/test_numerics.py \
  -q --maxfail=20 -rs > $R/tests-other.log 2>&1; tail -2 $R/tests-other.log
tar -czf $OUT/run5.tar.gz -C $R .; cp $R/tests-*.log $OUT/
