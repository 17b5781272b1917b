#!/usr/bin/env bash
# Session 52, device run 6, on 4f1509c's build: the rule (fitted at k = 4) against session 51's
# (kbit._C._set_wgmma_max_tokens(128)) at k = 2, 3 and 5, alternating in one process, on five shapes at M = 160, 320,
# 640 and 1024 (fp16, cold L2, graph replays).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for k in 2 3 5; do
  timeout 150 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 128,0 --k $k \
    --shapes llama8b_gu,Q,down,gateup,glm_shared_dn --ms 160,320,640,1024 --rounds 3 --out $OUT/max-tokens-k$k.json \
    > $OUT/max-tokens-k$k.log 2>&1; echo "k=$k rc=$?"
  grep -v "^ \|Warning\|sync_debug" $OUT/max-tokens-k$k.log | sed 's/ (1.000)//' | cut -c1-200
done
python3 scripts/probe_wgmma_plans.py --shapes llama8b_gu,Q,down,gateup,glm_shared_dn --ms 160,320,640,1024 --k 2 \
  > $OUT/plans-k2.log 2>&1
python3 scripts/probe_wgmma_plans.py --shapes llama8b_gu,Q,down,gateup,glm_shared_dn --ms 160,320,640,1024 --k 5 \
  > $OUT/plans-k5.log 2>&1
