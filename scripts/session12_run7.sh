#!/usr/bin/env bash
# Session 12, device run 7: PDL for the tile and wgmma kernels (wait at the top, no prefetch):
# the PDL tests, the tile / wgmma tests, bench_pdl on those ops, and the layer table at M = 8-32.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_dependent_launch.py -q --maxfail=5 2>&1 | tee $OUT/tests-pdl.log | tail -2
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 -k "tile or wgmma or graph or stream or deterministic" 2>&1 \
  | tee $OUT/tests-tile.log | tail -2
timeout 80 python3 -m benchmarks.bench_pdl --op tile_gemm --shapes O,gateup,down --ms 16,32 --reps 2 \
  --out $LOGS/pdl_tile > $LOGS/pdl_tile.log 2>&1; grep " M=" $LOGS/pdl_tile.log; cp $LOGS/pdl_tile/pdl-*.json $OUT/pdl-tile.json
timeout 80 python3 -m benchmarks.bench_pdl --op wgmma_gemm --shapes llama8b_gu,llama70b_gu --ms 16,64 --reps 2 \
  --out $LOGS/pdl_wg > $LOGS/pdl_wg.log 2>&1; grep " M=" $LOGS/pdl_wg.log; cp $LOGS/pdl_wg/pdl-*.json $OUT/pdl-wgmma.json
timeout 100 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,moe_gu,moe_dn,llama8b_gu,llama70b_gu --ms 8,16,32 --out /tmp/results > $LOGS/results.log 2>&1
grep "^| \|^### M" $LOGS/results.log | grep -v "^|---\|column\|family\|hot" | cut -d'|' -f2,4,12,13,18,19 | head -40
cp /tmp/results/*/results-full.json /tmp/results/*/results-full.md $OUT/
