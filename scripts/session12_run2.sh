#!/usr/bin/env bash
# Session 12, device run 2: PDL on / off in one process (benchmarks.bench_pdl; run 1 compared two
# processes and their drift was as large as the effect), the host cost per call with the direct
# binding and inference_mode (bench_dispatch, round robin), and the layer table with PDL on
# (benchmarks.run, M = 1..16, fp16 / int4 / fp8 in the same run).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_dependent_launch.py -q -x 2>&1 | tail -2
timeout 150 python3 -m benchmarks.bench_pdl --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,4 \
  --out $LOGS/pdl > $LOGS/pdl.log 2>&1; grep " M=" $LOGS/pdl.log
timeout 80 python3 -m benchmarks.bench_pdl --op mma_gemm --shapes KV,gateup,llama8b_gu --ms 8,16 --reps 2 \
  --out $LOGS/pdl_mma > $LOGS/pdl_mma.log 2>&1; grep " M=" $LOGS/pdl_mma.log
timeout 100 python3 -m benchmarks.bench_dispatch --out $LOGS/host > $LOGS/host.log 2>&1; grep "M=  1" $LOGS/host.log
timeout 200 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,moe_gu,moe_dn,llama8b_gu,llama70b_gu --ms 1,2,4,8,16 --out /tmp/results > $LOGS/results.log 2>&1
tail -40 $LOGS/results.log | grep "^|" | head -40
cp $LOGS/pdl/pdl-*.json $OUT/pdl.json; cp $LOGS/pdl_mma/pdl-*.json $OUT/pdl-mma.json; cp $LOGS/host/dispatch.json $OUT/host-cost.json
cp /tmp/results/*/results-full.json /tmp/results/*/results-full.md $OUT/
