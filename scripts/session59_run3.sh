#!/usr/bin/env bash
# Session 59, device run 3 (session 58's final build): the HF Qwen3-MoE model's CUDA-graph decode in bf16 (run 2: the
# fp16 model's experts, torch._grouped_mm in fp16, copy to the host inside the step: no capture), kbit k = 2-5 with
# lm_head bf16, then k = 4 with lm_head quantized; the kernels of a step by CUPTI.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 280 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 2,3,4,5 --repeats 3 --out $OUT/hf_model_bf16 \
  > $OUT/hf-model-bf16.log 2>&1
echo "hf model bf16 rc=$?"; grep -E "tok/s|failed|Error" $OUT/hf-model-bf16.log | cut -c1-300
grep -A8 "graph decode tok/s" $OUT/hf_model_bf16/hf_model.md
timeout 150 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 \
  --out $OUT/hf_model_bf16_lm_head > $OUT/hf-model-bf16-lm-head.log 2>&1
echo "hf model bf16 lm_head rc=$?"; grep -E "tok/s|failed|Error" $OUT/hf-model-bf16-lm-head.log | cut -c1-300
grep -A5 "graph decode tok/s" $OUT/hf_model_bf16_lm_head/hf_model.md
grep "kernels of a step" $OUT/hf_model_bf16*/hf_model.md | cut -c1-900
