#!/usr/bin/env bash
# Session 51, device run 2: wgmma CTAs of 80, 96, 112 and 128 tokens, the rule's balanced chunks (and one chunk more
# where both plans run in one wave). The token-chunk, any-M, plan and persistent wgmma tests, the rule's plans, then
# the op with 128 tokens forced (main's rule above M = 64), the rule (0) and the other chunks forced, alternating in one
# process (k = 4, fp16, cold L2, graph replays).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py \
  -k "wgmma_forced_token or (any_m and wgmma) or wgmma_launch_plan or wgmma_persistent or test_kernel_any_m" \
  > $OUT/tests-quick.log 2>&1
echo "quick tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-quick.log | head -8 | cut -c1-300
SH=Q,O,down,gateup,KV,glm_shared_gu,llama8b_gu
MS=72,80,96,112,144,160,192,224,256,288,320,352,384,448,512
python3 scripts/probe_wgmma_plans.py --shapes $SH --ms $MS > $OUT/plans.log 2>&1; echo "plans rc=$?"
timeout 330 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_tokens --diags 128,0,80,96,112 --shapes $SH \
  --ms $MS --rounds 3 --out $OUT/tokens-bench.json > $OUT/tokens-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/tokens-bench.log | sed 's/ (1.000)//' | cut -c1-200
