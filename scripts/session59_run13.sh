#!/usr/bin/env bash
# Session 59, device run 13 (the review's mends: the graph and no-PDL graph timed alternately, the no-PDL graph's
# tokens checked, exit status 1 on a kbit model's capture failure, peak memory per model; the GPU test's dynamo reset
# in a finally): the HF integration tests and the bench's test, then run 11's command again.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q tests/test_integration_transformers.py benchmarks/tests/test_hf_model.py \
  > $OUT/tests-hf.log 2>&1
echo "tests rc=$?"; grep -E "FAIL|Error|passed|failed" $OUT/tests-hf.log | tail -4 | cut -c1-300
timeout 300 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
  --out $OUT/hf_model_bf16_compile_lm_head > $OUT/hf-model-bf16-compile-lm-head.log 2>&1
echo "hf model rc=$?"; grep -E "tok/s|failed|rror:" $OUT/hf-model-bf16-compile-lm-head.log | cut -c1-300 | tail -6
grep -A4 "graph decode tok/s" $OUT/hf_model_bf16_compile_lm_head/hf_model.md
python3 -c "import json; r=json.load(open('$OUT/hf_model_bf16_compile_lm_head/hf_model.json'))
print([(x['variant'], x.get('graph_no_pdl_same_tokens'), x.get('max_memory_allocated')) for x in r['rows']])"
grep "kernels of a step" $OUT/hf_model_bf16_compile_lm_head/hf_model.md | cut -c1-700
