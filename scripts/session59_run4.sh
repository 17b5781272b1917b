#!/usr/bin/env bash
# Session 59, device run 4 (session 58's final build): the HF Qwen3-MoE model's CUDA-graph decode in bf16 with the
# step through torch.compile(fullgraph=True) (inductor fuses HF's elementwise glue, ~300 kernels a token in run 3),
# bf16 against kbit k = 4, lm_head bf16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 420 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --repeats 3 --compile \
  --out $OUT/hf_model_bf16_compile \
  > $OUT/hf-model-bf16-compile.log 2>&1
echo "hf model bf16 compile rc=$?"
grep -E "tok/s|failed|Error|rror:" $OUT/hf-model-bf16-compile.log | cut -c1-300 | tail -8
grep -A4 "graph decode tok/s" $OUT/hf_model_bf16_compile/hf_model.md
python3 -c "import json; r=json.load(open('$OUT/hf_model_bf16_compile/hf_model.json'))
print([(x['variant'], x.get('compile_s')) for x in r['rows']])"
grep "kernels of a step" $OUT/hf_model_bf16_compile/hf_model.md | cut -c1-900
