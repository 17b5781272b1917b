#!/usr/bin/env bash
# Session 54, device run 2: why stream-K in clusters of 4 ran 25% slower than in clusters of 2 on Qwen3 Q at M = 256
# (run 1), at the same work a CTA: each set's plan (the clusters the GPU runs at once) and the times with the
# clusters launched capped (kbit._C._set_wgmma_grid_clusters), alternating in one process.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
CONFIGS="rule:;s2:wgmma_stream=2;s3:wgmma_stream=3;s4:wgmma_stream=4;s4g32:wgmma_stream=4,wgmma_grid_clusters=32"
CONFIGS="$CONFIGS;s4g30:wgmma_stream=4,wgmma_grid_clusters=30;s8:wgmma_stream=8;s8g15:wgmma_stream=8,wgmma_grid_clusters=15"
CONFIGS="$CONFIGS;s8g14:wgmma_stream=8,wgmma_grid_clusters=14"
timeout 250 python3 scripts/probe_wgmma_aid_sets.py --shapes Q,llama8b_gu,down --ms 256,512 --rounds 2 \
  --configs "$CONFIGS" --out $OUT/stream-grid.json > $OUT/stream-grid.log 2>&1; echo "configs rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/stream-grid.log | cut -c1-220
