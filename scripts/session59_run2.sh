#!/usr/bin/env bash
# Session 59, device run 2 (main's kernels, session 58's final build): the HF Qwen3-MoE model's decode with a
# StaticCache, one step captured as a CUDA graph (benchmarks/bench_hf_model.py's new graph decode), fp16 against kbit
# k = 2-5 (lm_head fp16), then k = 4 with lm_head quantized too.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 280 python3 -m benchmarks.bench_hf_model --ks 2,3,4,5 --repeats 3 --out $OUT/hf_model > $OUT/hf-model.log 2>&1
echo "hf model rc=$?"; grep -E "tok/s|failed|Error" $OUT/hf-model.log | cut -c1-300; tail -9 $OUT/hf_model/hf_model.md
timeout 150 python3 -m benchmarks.bench_hf_model --ks 4 --quantize-lm-head --repeats 3 --out $OUT/hf_model_lm_head \
  > $OUT/hf-model-lm-head.log 2>&1
echo "hf model lm_head rc=$?"; grep -E "tok/s|failed|Error" $OUT/hf-model-lm-head.log | cut -c1-300
tail -5 $OUT/hf_model_lm_head/hf_model.md
