#!/usr/bin/env bash
# Session 52, device run 4: the rule's 160-token candidate by the fitted model (wgmma_model_time: the work dealt
# round-robin to the clusters at once, the busiest cluster's time). The plan tests; the rule's plans; the op under the
# rule against session 51's rule (kbit._C._set_wgmma_max_tokens(128)) alternating in one process on eight shapes at
# the Ms where chunks of 160 are fewer than of 128; kbit.gemm against cuBLAS (fp16, bf16) at those Ms.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q tests/test_cuda_gemm.py -k "wgmma_plan_160 or wgmma_launch_plan or wgmma_persistent_rule \
or wgmma_rule or wgmma_split_tail_rule or wgmma_aids" > $OUT/tests-plan.log 2>&1
echo "plan tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-plan.log | head -8 | cut -c1-300
SH=llama8b_gu,llama70b_gu,Q,O,down,gateup,glm_shared_gu,glm_shared_dn
MS=136,160,272,320,400,480,640,800,1024
python3 scripts/probe_wgmma_plans.py --shapes $SH --ms $MS > $OUT/plans.log 2>&1; echo "plans rc=$?"
timeout 240 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 128,0 --shapes $SH \
  --ms $MS --rounds 3 --out $OUT/max-tokens-bench.json > $OUT/max-tokens-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/max-tokens-bench.log | sed 's/ (1.000)//' | cut -c1-200
gemm_records s52 $SH 136,160,272,320,400,480,640,800
