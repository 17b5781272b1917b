#!/usr/bin/env bash
# Session 52, device run 5, on 4f1509c's build (the 160-token shape and the fitted rule): the dispatch sweeps at the
# table's Ms where the rule now takes chunks of 160 (fp16 and bf16 at M = 768, 1024, 1536), every k, the nine table
# shapes, for the H200 table's merge.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r5; mkdir -p $R; start_device_run || exit 1
tune_sweep $R tune 280 --ms 768,1024,1536
tune_sweep $R bf16 280 --dtype bfloat16 --ms 768,1024,1536
tar -czf $OUT/run5-tune.tar.gz -C $R .
