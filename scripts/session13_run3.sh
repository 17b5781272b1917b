#!/usr/bin/env bash
# Session 13, device run 3: the spread A/B (the dense GEMV with and without the shared-memory padding
# that spreads a small grid over the SMs), the layer table on the new dispatch table (M = 1-32),
# and tests/test_cuda_gemm.py whole (the first half of the GPU suite).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s13; start_device_run || exit 1
timeout 90 python3 scripts/probe_gemv_launch.py --shapes KV,Q,O,gateup,down,llama8b_gu --ms 1,4,16 --settings 1:0,1:1 \
  --out $LOGS/launch 2>&1 | grep "^|" | tee $LOGS/launch.log
timeout 150 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,moe_gu,moe_dn,llama8b_gu,llama70b_gu --ms 1,2,4,8,16,32 --out /tmp/results > $LOGS/results.log 2>&1
grep "^| \*\*TOTAL\|^### M" $LOGS/results.log | head -24
timeout 250 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -rs 2>&1 | tee $LOGS/gpu-suite-part1.log | tail -3
cp $LOGS/launch.log $LOGS/launch/gemv-launch.json $LOGS/gpu-suite-part1.log $OUT/ 2>/dev/null
cp /tmp/results/*/results-full.json /tmp/results/*/results-full.md $OUT/
