#!/usr/bin/env bash
# Session 66, run 5: the Llama-3 8B-sized dense decode (bench_hf_model --dense --dims llama3-8b, bf16, compiled, graph,
# lm_head quantized, q/k/v and gate/up fused, GatedMLP) under session 66's decode rule (its fused gate/up, 28672 x
# 4096, at 8 warps per x-resident unit); the gated op at M = 1 under it. RULE=0: the same under session 37's rule
# (kbit._C._set_gemv_decode_path_rule(0) in the benchmark's process).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
RULE=${RULE:-1}
if [ "$RULE" = 1 ]; then
  timeout 60 python3 scripts/probe_gated_gemv.py --shapes 28672x4096,57344x8192,10240x2048 --dtypes fp16,bf16 --ms 1 \
    --json $OUT/probe-gated.json > $OUT/probe-gated.log 2>&1
  echo "probe rc=$?"; grep "^| [0-9]" $OUT/probe-gated.log
fi
timeout 420 python3 -c "import runpy, sys, kbit; kbit._C._set_gemv_decode_path_rule($RULE); \
sys.argv = ['bench_hf_model'] + sys.argv[1:]; runpy.run_module('benchmarks.bench_hf_model', run_name='__main__')" \
  --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile --dense --fuse-projections --dims llama3-8b \
  --out $OUT/hf-l8b-rule$RULE > $OUT/hf-l8b-rule$RULE.log 2>&1
echo "hf l8b rule $RULE rc=$?"; grep -E "^\| (bf16|kbit k=4[a-z+ ]*) \| [0-9]" $OUT/hf-l8b-rule$RULE/hf_model.md | cut -c1-160
