#!/usr/bin/env bash
# Session 67, run 3: the lm_head shapes' dispatch sweep past M = 128 (run 2 timed M = 1-128), as the H200 table's
# other shapes were timed: M = 192-512 settled, M = 768-4096 sustained (--sustain 0.3, the 700 W cap's regime), and
# with bf16 activations 192-512 settled and 768-4096 sustained, one sweep a shape and regime.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r3; mkdir -p $R; start_device_run || exit 1
echo "start $(date +%T)"
for s in qwen3_lm_head llama8b_lm_head qwen25_7b_lm_head; do
  tune_sweep $R $s-mid 90 --shapes $s --ms 192,256,384,512
  tune_sweep $R $s-large 150 --shapes $s --sustain 0.3 --ms 768,1024,1536,2048,3072,4096
  tune_sweep $R $s-bf16-mid 60 --shapes $s --dtype bfloat16 --ms 192,256,384,512
  tune_sweep $R $s-bf16-large 120 --shapes $s --dtype bfloat16 --sustain 0.3 --ms 768,1024,1536,2048,3072,4096
done
for d in $R/*/; do n=$(basename $d); for f in $d*.json; do [ -f "$f" ] && cp "$f" $OUT/$n.json; done; done
for f in $R/*.log; do tail -2 $f | cut -c1-150 > $OUT/$(basename $f); done
