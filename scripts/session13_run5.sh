#!/usr/bin/env bash
# Session 13, device run 5 (the last of the budget): the review follow-ups (launch code in
# scalar_gemv_launch.cuh with a launch-plan query, spare lanes of M = 2-4 reading slots of both
# parities) under the GEMV / grouped / dispatch / PDL / opcheck tests; M = 3 against PyTorch int4
# and the time per k on the Llama shapes at M = 1.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s13; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py tests/test_dependent_launch.py -q --maxfail=10 \
  -k "gemv or grouped_gemm_takes or launch_plan or tuning_aids or dispatch or table" 2>&1 | tee $LOGS/tests.log | tail -2
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,llama8b_gu,llama70b_gu --ms 3 --out /tmp/r3 > $LOGS/m3.log 2>&1
timeout 60 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 2,3,4,5 --dtypes fp16 \
  --shapes llama8b_gu,llama70b_gu --ms 1 --out /tmp/rk > $LOGS/ks.log 2>&1
grep "^| Q \|^| KV \|^| O \|^| gateup \|^| down \|^| llama" /tmp/r3/*/results-full.md | head -7
grep "^| llama" /tmp/rk/*/results-full.md | head -8
cp $LOGS/tests.log $OUT/; cp /tmp/r3/*/results-full.md $OUT/results-m3.md; cp /tmp/r3/*/results-full.json $OUT/results-m3.json
cp /tmp/rk/*/results-full.md $OUT/results-ks.md; cp /tmp/rk/*/results-full.json $OUT/results-ks.json
