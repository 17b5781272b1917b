#!/usr/bin/env bash
# Session 14, device run 6 (what the budget left, ~4 min): unit slots for grouped launches only (the
# dense kernels' code back to session 13's: no spills at 16 tokens) and grouped_gemv_wins up to 4
# tokens per expert on any E. The launch-plan / tuning-aid / dispatch-rule / grouped GEMV tests, then
# Qwen3 Q and gate/up at M = 16 against session 14 run 5 (7.51 / 10.39 us with the slot code).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s14; start_device_run || exit 1
timeout 50 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 \
  -k "launch_plan or tuning_aids or takes_the_gemv or warp_schedule or grouped_gemv or grouped_gemm_cuda or gemv_gemm_user" \
  > $OUT/tests.log 2>&1; tail -2 $OUT/tests.log
timeout 25 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,gateup --ms 1,16 --out /tmp/rd > $LOGS/run-dense.log 2>&1
grep "^| Q \|^| gateup" /tmp/rd/*/results-full.md | head -4
cp /tmp/rd/*/results-full.md $OUT/results-dense.md; cp /tmp/rd/*/results-full.json $OUT/results-dense.json
