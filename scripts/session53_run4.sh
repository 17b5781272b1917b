#!/usr/bin/env bash
# Session 53, device run 4, the final csrc: the split step only past 4 splits (kWgModelSplitStep = 100 a split past 4):
# the plan tests and every wgmma test, the plans, the rule against session 52's on runs 2-3's cells (k = 4 fp16, plus
# KV at M = 352 / 384), then every test file but test_cuda_gemm.py (run 3 ran it whole on the step-50 build, whose
# kernels this build's are).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q tests/test_cuda_gemm.py -k "wgmma or remembered or dispatch or table" \
  > $OUT/tests-wgmma.log 2>&1
echo "wgmma tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
SH=llama8b_gu,llama70b_gu,Q,O,down,gateup,KV,glm_shared_gu,glm_shared_dn
MS=136,144,257,272,288,352,384,400,432,1000
python3 scripts/probe_wgmma_plans.py --shapes $SH --ms $MS > $OUT/plans.log 2>&1; echo "plans rc=$?"
timeout 200 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 160,0 --shapes $SH \
  --ms $MS --rounds 3 --out $OUT/wide-bench.json > $OUT/wide-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/wide-bench.log | sed 's/ (1.000)//' | cut -c1-200
timeout 280 python3 -m pytest -q $(other_test_files) > $OUT/tests-other.log 2>&1
echo "other tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-other.log | head -8 | cut -c1-300
