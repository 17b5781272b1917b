#!/usr/bin/env bash
# Session 55, device run 3: the dispatch sweeps at the large-M grid points in the sustained regime
# (benchmarks.tune_dispatch --sustain 0.3: back-to-back replays at the power cap), fp16 and bf16, every k, the nine
# table shapes, for the H200 table's merge (scripts/h200_table_merge.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r3; mkdir -p $R; start_device_run || exit 1
tune_sweep $R tune 330 --sustain 0.3 --ms 768,1024,1536,2048,3072,4096
tune_sweep $R bf16 230 --sustain 0.3 --dtype bfloat16 --ms 768,1024,1536,2048,3072,4096
for f in $R/tune/*.json $R/tune/*.md $R/bf16/*.json $R/bf16/*.md; do [ -f "$f" ] && cp "$f" $OUT/; done
cp $R/tune.log $R/bf16.log $OUT/ 2>/dev/null
grep -h "M=1536\|M=2048" $R/tune.log | grep "k=4" | cut -c1-120
