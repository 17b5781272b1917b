#!/usr/bin/env bash
# Session 32, device run 3: per-CTA clock traces of one wgmma_gemm call (exp_variants/trace: the tree patched by
# scripts/wgmma_trace_patch.py, carried alone), unpaired and paired, Qwen3 Q / gate/up and Llama-3 8B / 70B gate/up.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p $OUT; R=/tmp/s32/r${RUN:-3}; mkdir -p $R; export PYTHONUNBUFFERED=1
so=_C.cpython-312-x86_64-linux-gnu.so
mkdir -p /tmp/v_trace && cp -r kbit /tmp/v_trace/ && xz -dc exp_variants/trace/$so.xz > /tmp/v_trace/kbit/$so
export PYTHONPATH=/tmp/v_trace:$(pwd)
for p in 1 2; do
  timeout 120 python3 scripts/probe_wgmma_trace.py --shapes Q,gateup,llama8b_gu,llama70b_gu --ms 16,40,64,128 \
    --aid wgmma_x_peers=$p --out $R/trace-p$p.json > $R/trace-p$p.log 2>&1
  echo "peers $p rc=$?"
done
cat $R/trace-p1.log | head -150
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
