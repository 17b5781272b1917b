#!/usr/bin/env bash
# Session 51, device run 8, on the final build: the rule (0) against 128-token chunks forced at k = 2 and 5 (the rule's
# model was measured at k = 4), on four shapes at M where the rule's plan differs, alternating in one process.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for k in 2 5; do
  timeout 150 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_tokens --diags 128,0 --k $k \
    --shapes Q,gateup,KV,llama8b_gu --ms 96,160,192,256,384,448,768 --rounds 3 --out $OUT/tokens-bench-k$k.json \
    > $OUT/tokens-bench-k$k.log 2>&1; echo "bench k=$k rc=$?"
  grep -v "^ \|Warning\|sync_debug" $OUT/tokens-bench-k$k.log | sed 's/ (1.000)//' | cut -c1-200
  python3 scripts/probe_wgmma_plans.py --k $k --shapes Q,gateup,KV,llama8b_gu --ms 96,160,192,256,384,448,768 \
    > $OUT/plans-k$k.log 2>&1
done
