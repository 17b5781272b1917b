#!/usr/bin/env bash
# Session 44, device run 4: the persistent CTAs against a cluster launched per cluster of work on the heavy shapes
# (Llama-3 8B and 70B gate/up, M = 256-2048: 3-14 rounds of units; run 3's sweep read 70B k = 2 at M = 1024-1536
# 18-24% slower than session 43's), k = 4 and 2, two alternating rounds, next to cuBLAS fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for k in 4 2; do
  timeout 150 python3 scripts/probe_wgmma_configs.py --one-each --rounds 2 --splits "" --k $k \
    --shapes llama70b_gu,llama8b_gu --ms 256,512,1024,1536,2048 --out $OUT/configs-k$k.json > $OUT/configs-k$k.log 2>&1
  echo "probe k=$k rc=$?"
  grep -E "fp16|rule" $OUT/configs-k$k.log | sed -E 's/plan \{.tokens.: ([0-9]+), .row_tiles.: ([0-9]+), .splits.: ([0-9]+), .ctas.: ([0-9]+), .grid_ctas.: ([0-9]+).*whole_units.: ([0-9]+)\}/t\1 rt\2 s\3 ctas \4 grid \5 whole \6/' | cut -c1-150
done
