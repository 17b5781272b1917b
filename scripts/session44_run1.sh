#!/usr/bin/env bash
# Session 44, device run 1: the wgmma kernel's persistent CTAs (as many clusters as the GPU runs at once, each running
# clusters of work in turn). Their tests and the wgmma plan tests around them; compute-sanitizer memcheck on the wgmma
# split cases (now with one cluster launched); the rule against a cluster launched per cluster of work (probe
# --one-each, two alternating rounds) at M = 256-1024 on the Qwen3, GLM shared and Llama-3 8B shapes, k = 4, next to
# cuBLAS fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "persistent or split_tail or wgmma_launch or \
wgmma_aids or wgmma_gemm_graph" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 100 wgmma-splits
timeout 280 python3 scripts/probe_wgmma_configs.py --one-each --rounds 2 --splits "" \
  --shapes gateup,Q,glm_shared_gu,llama8b_gu,O,down --ms 256,384,512,768,1024 \
  --out $OUT/configs.json > $OUT/configs.log 2>&1; echo "probe rc=$?"
grep -E "fp16|rule" $OUT/configs.log | sed -E 's/plan \{.tokens.: ([0-9]+), .row_tiles.: ([0-9]+), .splits.: ([0-9]+), .ctas.: ([0-9]+), .grid_ctas.: ([0-9]+).*whole_units.: ([0-9]+)\}/t\1 rt\2 s\3 ctas \4 grid \5 whole \6/' | cut -c1-150
