#!/usr/bin/env bash
# Session 12, device runs 5-6: the codebook / offsets / row-scale L2 prefetch before the PDL wait
# (bench_pdl: PDL with the rule's prefetch, with none, and off), and the whole GPU suite in two
# halves (PART=1: tests/test_cuda_gemm.py; PART=2: every other test file), the layer table in part 2.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s12; start_device_run || exit 1
if [ "${PART:-1}" = 1 ]; then
  timeout 100 python3 -m benchmarks.bench_pdl --shapes KV,Q,gateup,llama8b_gu --ms 1 --prefetch=-1,0 \
    --out $LOGS/pdl > $LOGS/pdl.log 2>&1; grep " M=" $LOGS/pdl.log; cp $LOGS/pdl/pdl-*.json $OUT/pdl-codebook-prefetch.json
  timeout 380 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -rs 2>&1 | tee $OUT/gpu-suite-part1.log | tail -3
else
  timeout 100 python3 -m benchmarks.bench_pdl --shapes KV,Q,gateup,llama8b_gu --ms 1 --prefetch=-1,0 \
    --out $LOGS/pdl > $LOGS/pdl.log 2>&1; grep " M=" $LOGS/pdl.log; cp $LOGS/pdl/pdl-*.json $OUT/pdl-codebook-prefetch.json
  timeout 330 python3 -m pytest tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py 2>&1 | tee $OUT/gpu-suite-part2.log | tail -3
  timeout 100 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
    --shapes Q,KV,O,gateup,down,moe_gu,moe_dn,llama8b_gu,llama70b_gu --ms 1,2,4 --out /tmp/results > $LOGS/results.log 2>&1
  grep "^| " $LOGS/results.log | grep -v "^|---\|column\|family" | head -40; cp /tmp/results/*/results-full.json /tmp/results/*/results-full.md $OUT/
fi
