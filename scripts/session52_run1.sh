#!/usr/bin/env bash
# Session 52, device run 1: the wgmma kernel's 160-token CTA shape (two warpgroups on 128 rows x 160 tokens, the
# consumers on the producers' registers by setmaxnreg) and the rule's 160 candidate (chunks of 160 where they are fewer
# than of 128). The wgmma tests that force each chunk and the plan tests; the rule's plans; the op under the rule
# against the rule without the 160 candidate (kbit._C._set_wgmma_max_tokens(128): session 51's), alternating in one
# process; 160 forced against the rule on the shapes the rule may leave; sanitizers on the persistent cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 240 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma_forced_token or wgmma_launch_plan or \
wgmma_plan_160 or wgmma_persistent or wgmma_gemm_forced_splits or wgmma_gemm_split_tail or wgmma_aids" \
  > $OUT/tests-quick.log 2>&1
echo "quick tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-quick.log | head -8 | cut -c1-300
SH=llama8b_gu,llama70b_gu,Q,O,down,gateup,KV,glm_shared_gu
MS=136,160,272,320,400,480,640,800
python3 scripts/probe_wgmma_plans.py --shapes $SH --ms $MS > $OUT/plans.log 2>&1; echo "plans rc=$?"
timeout 200 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 128,0 --shapes $SH \
  --ms $MS --rounds 3 --out $OUT/max-tokens-bench.json > $OUT/max-tokens-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/max-tokens-bench.log | sed 's/ (1.000)//' | cut -c1-200
sanitize_run memcheck 100 wgmma-persistent
sanitize_run racecheck 150 wgmma-persistent
