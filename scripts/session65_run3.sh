#!/usr/bin/env bash
# Session 65, run 3 (the kernels: the dense gated GEMV x staged at 1-2 rows, x resident at 1): the gated op's and
# module's tests, memcheck on the gated cases, the op at M = 1, 2 on the x-resident shapes (the 2-row call now the two
# ops), and a Llama-3 8B-sized dense model's decode (4 layers in Qwen3's layer form, bf16, k = 4, lm_head quantized,
# compiled, CUDA graph): kbit unfused, q/k/v and gate/up fused, and the MLPs as kbit.nn.GatedMLP.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/test_nn_gated_mlp.py tests/test_moe_slots.py \
  -k "gated or silu or Gated or slot_kernel" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $OUT/tests.log | tail -8 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 90 gated-gemv
timeout 60 python3 scripts/probe_gated_gemv.py --shapes 28672x4096,57344x8192,10240x2048 --dtypes fp16 \
  --json $OUT/probe-gated.json > $OUT/probe-gated.log 2>&1
echo "probe rc=$?"; grep "^| [0-9]" $OUT/probe-gated.log
timeout 300 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
  --dense --fuse-projections --dims llama3-8b --out $OUT/hf-l8b > $OUT/hf-l8b.log 2>&1
echo "hf l8b rc=$?"; grep -E "^\| (bf16|kbit k=4[a-z+ ]*) \| [0-9]" $OUT/hf-l8b/hf_model.md | cut -c1-140
grep -E "^(built|kbit fused)" $OUT/hf-l8b.log | head -4
