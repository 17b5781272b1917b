#!/usr/bin/env bash
# Session 42, device run 5 (run 3's build): the fallback in bf16 (cuBLAS called with reduced-precision reductions
# off) against cuBLAS bf16 (PyTorch's default, reductions allowed), M = 1024-4096.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; start_device_run || exit 1
timeout 150 python3 scripts/probe_dequant_cublas.py --shapes Q,gateup,O,down,llama8b_gu --ms 1024,2048,4096 \
  --dtype bf16 \
  > $OUT/probe-dqcublas-bf16.log 2>&1; echo "probe rc=$?"; grep -v Warn $OUT/probe-dqcublas-bf16.log | cut -c1-220
