#!/usr/bin/env bash
# Session 43, device run 1: the wgmma kernel's split tail (the units' full CTA waves whole, the partial last wave's
# units split along K in clusters). Its tests and the wgmma tests around it; the rule against no tail and each forced
# split count with and without its tail (probe_wgmma_configs --tail) at M = 192-1024 on the Qwen3, GLM shared and
# Llama-3 8B shapes, k = 4, next to cuBLAS fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 170 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "split_tail or wgmma_launch or forced_splits or \
row_tiles or forced_token_chunks" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
timeout 330 python3 scripts/probe_wgmma_configs.py --tail --row-tiles 8 --splits 2,4,8 \
  --shapes gateup,Q,O,down,KV,glm_shared_gu,glm_shared_dn,llama8b_gu --ms 192,256,384,512,768,1024 \
  --out $OUT/configs.json > $OUT/configs.log 2>&1; echo "probe rc=$?"
grep -E "fp16|rule|no tail" $OUT/configs.log | sed -E 's/plan \{.tokens.: ([0-9]+), .row_tiles.: ([0-9]+), .splits.: ([0-9]+), .ctas.: ([0-9]+).*whole_units.: ([0-9]+)\}/t\1 rt\2 s\3 ctas \4 whole \5/' | cut -c1-150
