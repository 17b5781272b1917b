#!/usr/bin/env bash
# Session 51, device run 6, on run 4's build: the rule (0) against 128-token chunks forced where the rule's one chunk
# more may apply past run 2's grid (M = 640-2048; shapes with few row blocks: one wave at these M), alternating in one
# process, and the rule's plans there.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
SH=O,down,glm_shared_dn,KV,Q,gateup; MS=448,576,640,768,896,1024,1536,2048
python3 scripts/probe_wgmma_plans.py --shapes $SH --ms $MS > $OUT/plans.log 2>&1; echo "plans rc=$?"
timeout 300 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_tokens --diags 128,0 --shapes $SH \
  --ms $MS --rounds 3 --out $OUT/tokens-bench.json > $OUT/tokens-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/tokens-bench.log | sed 's/ (1.000)//' | cut -c1-200
