#!/usr/bin/env bash
# Session 44, device run 2: y's tile into shared memory by stmatrix (transposed 8 x 8 matrices; was 2-byte stores).
# The wgmma tests (every one that takes the one-split path: persistent, split tail, row tiles, views, K tail, first
# stage, y tile pieces, token chunks, graph); the rule at M = 128-1024 on six shapes, two rounds, against run 1's
# (same probe, the 2-byte stores), next to cuBLAS fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "wgmma" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
timeout 250 python3 scripts/probe_wgmma_configs.py --rounds 2 --splits "" \
  --shapes gateup,Q,glm_shared_gu,llama8b_gu,O,down --ms 128,256,384,512,768,1024 \
  --out $OUT/configs.json > $OUT/configs.log 2>&1; echo "probe rc=$?"
grep -E "fp16|rule" $OUT/configs.log | sed -E 's/plan \{.tokens.: ([0-9]+), .row_tiles.: ([0-9]+), .splits.: ([0-9]+), .ctas.: ([0-9]+), .grid_ctas.: ([0-9]+).*whole_units.: ([0-9]+)\}/t\1 rt\2 s\3 ctas \4 grid \5 whole \6/' | cut -c1-150
