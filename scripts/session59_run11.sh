#!/usr/bin/env bash
# Session 59, device run 11 (the final build): the HF Qwen3-MoE model's compiled CUDA-graph decode in bf16, k = 4 with
# lm_head quantized, now also captured without PDL (the step's time without it, and the kernels' own durations).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
  --out $OUT/hf_model_bf16_compile_lm_head > $OUT/hf-model-bf16-compile-lm-head.log 2>&1
echo "hf model rc=$?"; grep -E "tok/s|failed|rror:" $OUT/hf-model-bf16-compile-lm-head.log | cut -c1-300 | tail -6
grep -A4 "graph decode tok/s" $OUT/hf_model_bf16_compile_lm_head/hf_model.md
grep "kernels of a step" $OUT/hf_model_bf16_compile_lm_head/hf_model.md | cut -c1-1200
