#!/usr/bin/env bash
# Session 53, device run 2: the 144-token CTA (wgmma_gemm_kernel<T, K, 144, 8>, the consumers on the producers'
# registers as at 160) and the rule's wide chunks balanced (ceil(M / 160) chunks of 144 or 160 tokens): the wgmma tests
# (144 forced in the token-chunk, split, split-tail and persistent tests; the plan tests), memcheck and racecheck on the
# persistent cases (now with 144), the plans, then the rule against session 52's (kbit._C._set_wgmma_max_tokens(160):
# the wide chunks always 160) alternating in one process, k = 4 fp16 on the shapes and Ms where the chunks differ, then
# k = 2 and 5 and bf16 on fewer.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma" > $OUT/tests-wgmma.log 2>&1
echo "wgmma tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
SH=llama8b_gu,llama70b_gu,Q,O,down,gateup,KV,glm_shared_gu,glm_shared_dn
MS=136,144,257,272,288,400,432,1000
python3 scripts/probe_wgmma_plans.py --shapes $SH --ms $MS > $OUT/plans.log 2>&1; echo "plans rc=$?"
timeout 200 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 160,0 --shapes $SH \
  --ms $MS --rounds 3 --out $OUT/wide-bench.json > $OUT/wide-bench.log 2>&1; echo "bench rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/wide-bench.log | sed 's/ (1.000)//' | cut -c1-200
for k in 2 5; do
  timeout 60 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 160,0 --k $k \
    --shapes llama8b_gu,Q,gateup,down --ms 136,272,400 --rounds 3 --out $OUT/wide-bench-k$k.json \
    > $OUT/wide-bench-k$k.log 2>&1; echo "bench k=$k rc=$?"
  grep -v "^ \|Warning\|sync_debug" $OUT/wide-bench-k$k.log | sed 's/ (1.000)//' | cut -c1-200
done
timeout 60 python3 scripts/probe_wgmma_diag_bench.py --aid wgmma_max_tokens --diags 160,0 --dtype bfloat16 \
  --shapes llama8b_gu,Q,gateup,down --ms 136,272,400 --rounds 3 --out $OUT/wide-bench-bf16.json \
  > $OUT/wide-bench-bf16.log 2>&1; echo "bench bf16 rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/wide-bench-bf16.log | sed 's/ (1.000)//' | cut -c1-200
sanitize_run memcheck 100 wgmma-persistent
sanitize_run racecheck 150 wgmma-persistent
