#!/usr/bin/env bash
# Session 12, device run 4: the dispatch table re-measured with PDL on (tune_dispatch), the build
# with it, the dispatch / GEMV / grouped / PDL / opcheck tests, and the layer table (benchmarks.run).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
tune_and_rebuild $LOGS/tune && cp $LOGS/tune/tc_dispatch_table.h $OUT/
timeout 150 python3 -m pytest tests/test_dependent_launch.py tests/test_cuda_gemm.py tests/test_opcheck.py -q --maxfail=10 \
  -k "dependent or switch or chained or sees or dispatch or table or gemv or grouped or opcheck or compile" 2>&1 \
  | tee $LOGS/tests.log | tail -2
timeout 120 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,moe_gu,moe_dn,llama8b_gu,llama70b_gu --ms 1,2,4,8,16,32 --out /tmp/results > $LOGS/results.log 2>&1
grep "^| \*\*TOTAL\|^### M\|^| llama8b\|^| KV\|^| Q " $LOGS/results.log | head -40
cp $LOGS/tune.log $LOGS/tests.log $OUT/; cp /tmp/results/*/results-full.json /tmp/results/*/results-full.md $OUT/
