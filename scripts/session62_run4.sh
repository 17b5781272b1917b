#!/usr/bin/env bash
# Session 62, run 4: the HF Qwen3-MoE model's decode (bf16, compiled, graph, lm_head quantized) with HF's routers and
# with kbit.router_topk, alternating on one machine (runs 2 and 3 were on two machines): default, swapped, default.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
for step in 1-default 2-routers 3-default; do
  extra=""; [ "${step#*-}" = routers ] && extra="--kbit-routers"
  timeout 170 python3 -m benchmarks.bench_hf_model --dtype bf16 --ks 4 --quantize-lm-head --repeats 3 --compile \
    $extra --out $OUT/hf-$step > $OUT/hf-$step.log 2>&1
  echo "hf $step rc=$?"; grep -E "^\| (bf16|kbit k=4) \| [0-9]" $OUT/hf-$step/hf_model.md | cut -c1-120
done
tar -C "$OUT" -czf /tmp/session62_run4.tgz . && rm -rf "${OUT:?}"/* && mv /tmp/session62_run4.tgz "$OUT"/
