#!/usr/bin/env bash
# Session 31, device run 7 (carried build: the M = 33-64 shape rule): where the dequantize + cuBLAS fallback's time goes
# (scripts/probe_dequant_cublas.py) on the Qwen3 and Llama-3 8B shapes at M = 64-256.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 scripts/probe_dequant_cublas.py --shapes Q,O,gateup,down,llama8b_gu --ms 64,128,256 2>&1 | grep -v Warn \
  | tee $R/dequant_cublas.log
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
