#!/usr/bin/env bash
# Session 65, run 2: a Llama-3 8B-sized dense model's decode (4 layers in Qwen3's layer form, bf16, k = 4, lm_head
# quantized, compiled, CUDA graph): kbit unfused, q/k/v and gate/up fused, and the MLPs as kbit.nn.GatedMLP; and the
# Qwen3-Coder-Next-sized dense one (hidden 2048, MLP 5120).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for cfg in "l8b:--dims llama3-8b" "q3:"; do
  name=${cfg%%:*}
  timeout 270 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
    --dense --fuse-projections ${cfg#*:} --out $OUT/hf-$name > $OUT/hf-$name.log 2>&1
  echo "hf $name rc=$?"; grep -E "^\| (bf16|kbit k=4[a-z+ ]*) \| [0-9]" $OUT/hf-$name/hf_model.md | cut -c1-140
  grep -E "^(built|kbit fused)" $OUT/hf-$name.log | head -4
done
