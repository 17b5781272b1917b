#!/usr/bin/env bash
# Session 16, device run 8 (carried build of 79d6840, the final tree): the MoE rows and sweep of record
# (benchmarks.run: Qwen3 MoE experts, 8-512 experts x 1-64 tokens, cuBLAS fp16 bmm beside); tarred
# into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s16; R=$LOGS/r8; mkdir -p $R; start_device_run || exit 1
timeout 90 python3 -m benchmarks.run --mode full --no-plots --no-model --ks 4 --dtypes fp16 \
  --shapes moe_gu,moe_dn --ms 1,2,4,8,16 --out /tmp/rm > $R/run-moe.log 2>&1
grep "^| moe" /tmp/rm/*/results-full.md | head -12
cp /tmp/rm/*/results-full.md $R/results-moe.md; cp /tmp/rm/*/results-full.json $R/results-moe.json
tar -czf $OUT/run8.tar.gz -C $R .; cp $R/results-moe.md $OUT/
