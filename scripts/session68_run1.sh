#!/usr/bin/env bash
# Session 68, run 1: the lm_head shapes' sweeps past M = 128 (M = 192-512 settled, 768-4096 sustained, fp16 and bf16
# activations), as session 67's run 3 ran them (its outputs were lost: a run brings back only a few files, and that run
# lost two shapes' JSONs; its script is gone), the outputs packed into one archive, $OUT/run1-sweeps.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r1; mkdir -p $R; start_device_run || exit 1
echo "start $(date +%T)"
for s in qwen3_lm_head llama8b_lm_head qwen25_7b_lm_head; do
  tune_sweep $R $s-mid 90 --shapes $s --ms 192,256,384,512
  tune_sweep $R $s-large 150 --shapes $s --sustain 0.3 --ms 768,1024,1536,2048,3072,4096
  tune_sweep $R $s-bf16-mid 60 --shapes $s --dtype bfloat16 --ms 192,256,384,512
  tune_sweep $R $s-bf16-large 120 --shapes $s --dtype bfloat16 --sustain 0.3 --ms 768,1024,1536,2048,3072,4096
done
P=$R/pack; mkdir -p $P
for d in $R/*/; do n=$(basename $d); [ "$n" = pack ] && continue
  for f in $d*.json; do [ -f "$f" ] && cp "$f" $P/$n.json; done; done
for f in $R/*.log; do cp $f $P/; done
tar -C $P -cJf $OUT/run1-sweeps.tar.xz . && ls -la $OUT
