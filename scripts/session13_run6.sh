#!/usr/bin/env bash
# Session 13, device run 6: the grouped goals' expert counts re-measured on the final tree (Qwen3 MoE
# gate/up and down, 64 / 256 / 512 experts x 1 and 8 tokens: #5's 256 x 1, #6's 64 x 8 and 512 x 8).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s13; start_device_run || exit 1
timeout 150 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 64,256,512 --per-expert 1,8 \
  --out $LOGS/grouped > $LOGS/grouped.log 2>&1
grep "^|" $LOGS/grouped/grouped-*.md | head -30
cp $LOGS/grouped/grouped-*.json $LOGS/grouped/grouped-*.md $OUT/ 2>/dev/null
