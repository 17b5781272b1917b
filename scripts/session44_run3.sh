#!/usr/bin/env bash
# Session 44, device run 3: the dispatch table after the wgmma kernel's persistent CTAs, which changed its time where
# the units exceed the SMs (Qwen3 gate/up and Q from M = 512-768, GLM shared gate/up and Llama-3 from 256; the other
# Qwen3 shapes only above M = 1024). fp16 sweeps at M = 512-2048 and bf16 at 384-1536 on those five shapes, every k,
# merged on the CPU machine with the earlier runs (later runs' rows win). Each in two parts by shape.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
QWEN=gateup,Q,glm_shared_gu; LLAMA=llama8b_gu,llama70b_gu
FP16_MS=512,768,1024,1536,2048; BF16_MS=384,512,768,1024,1536
date +%T
tune_sweep $R tune-qwen 100 --shapes $QWEN --ms $FP16_MS
tune_sweep $R tune-llama 130 --shapes $LLAMA --ms $FP16_MS
tune_sweep $R bf16-qwen 90 --dtype bfloat16 --shapes $QWEN --ms $BF16_MS
tune_sweep $R bf16-llama 120 --dtype bfloat16 --shapes $LLAMA --ms $BF16_MS
grep -hE "k=4 M=" $R/tune-*.log $R/bf16-*.log | cut -c1-160
tar -czf $OUT/run${RUN:-3}-tune.tar.gz -C $R .
