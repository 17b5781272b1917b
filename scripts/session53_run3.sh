#!/usr/bin/env bash
# Session 53, device run 3: the rule's model with a per-split step (kWgModelSplitStep = 50, gemm_cuda.cpp; session 52's
# rule under kbit._C._set_wgmma_max_tokens(160) keeps its model without it): the plan tests, the plans, the rule
# against session 52's on run 2's cells (k = 4 fp16), then test_cuda_gemm.py whole and benchmarks/tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 100 python3 -m pytest -q tests/test_cuda_gemm.py -k "wgmma_plan or remembered or wgmma_launch_plan or \
wgmma_persistent_rule or wgmma_rule or wgmma_split_tail_rule or wgmma_aids" > $OUT/tests-plan.log 2>&1
echo "plan tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-plan.log | head -8 | cut -c1-300
SH=llama8b_gu,llama70b_gu,Q,O,down,gateup,KV,glm_shared_gu,glm_shared_dn
MS=136,144,257,272,288,400,432,1000
python3 scripts/probe_wgmma_plans.py --shapes $SH --ms $MS > $OUT/plans.log 2>&1; echo "plans rc=$?"
timeout 200 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 160,0 --shapes $SH \
  --ms $MS --rounds 3 --out $OUT/wide-bench.json > $OUT/wide-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/wide-bench.log | sed 's/ (1.000)//' | cut -c1-200
timeout 290 python3 -m pytest -q tests/test_cuda_gemm.py benchmarks/tests > $OUT/tests-gemm.log 2>&1
echo "test_cuda_gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -8 | cut -c1-300
