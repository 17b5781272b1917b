#!/usr/bin/env bash
# Session 59, device run 5 (moe_gather's and moe_route_gather's launches through one with_row_copy_unit helper, host
# code): the MoE glue tests, the bench's tiny test; then the HF Qwen3-MoE model's compiled CUDA-graph decode in bf16
# with lm_head quantized too (k = 4).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest -q tests/test_moe_ops.py tests/test_opcheck.py benchmarks/tests/test_hf_model.py \
  -k "moe or gather or route or silu or combine or hf or kernel_name" > $OUT/tests-moe.log 2>&1
echo "tests moe rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-moe.log | tail -6 | cut -c1-300
timeout 300 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
  --out $OUT/hf_model_bf16_compile_lm_head > $OUT/hf-model-bf16-compile-lm-head.log 2>&1
echo "hf model bf16 compile lm_head rc=$?"
grep -E "tok/s|failed|rror:" $OUT/hf-model-bf16-compile-lm-head.log | cut -c1-300 | tail -6
grep -A4 "graph decode tok/s" $OUT/hf_model_bf16_compile_lm_head/hf_model.md
grep "kernels of a step" $OUT/hf_model_bf16_compile_lm_head/hf_model.md | cut -c1-700
