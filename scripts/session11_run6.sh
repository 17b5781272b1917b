#!/usr/bin/env bash
# Session 11, device run 6: the goal benchmarks on the committed tree (benchmarks.run, all columns),
# few output files (the device returns a limited number).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
. scripts/gpu_build.sh
build_tree "$(pwd)" /tmp/build.log || exit 1
timeout 300 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes Q,KV,O,gateup,down,moe_gu,moe_dn,llama8b_gu,llama70b_gu --ms 1,2,4,8,16,32,64,128 --out /tmp/results > "$OUT/results.log" 2>&1
cp /tmp/results/*/results-full.json /tmp/results/*/results-full.md "$OUT/"
tail -45 "$OUT/results.log"
