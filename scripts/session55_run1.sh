#!/usr/bin/env bash
# Session 55, device run 1: sustained kbit.gemm against cuBLAS fp16 with NVML's SM clock, power and limit reasons
# sampled (scripts/probe_power.py): is a prefill cell's gap cycles or clocks?
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
nvidia-smi --query-gpu=name,power.limit,power.max_limit,clocks.max.sm,temperature.gpu --format=csv
timeout 300 python3 scripts/probe_power.py --seconds 1.2 --cool 1.0 --rounds 2 \
  --cells llama70b_gu:512,llama70b_gu:1024,llama8b_gu:512,llama8b_gu:1024,gateup:512,Q:1024,llama70b_gu:1,llama8b_gu:1,llama8b_gu:8 \
  --out $OUT/power.json > $OUT/power.log 2>&1; echo "probe rc=$?"
grep -v "^ \|Warning\|sync_debug" $OUT/power.log | cut -c1-170
