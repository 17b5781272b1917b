#!/usr/bin/env bash
# Session 45, device run 1: the dense M = 1 GEMV's intercept and streaming rate (probe_gemv_slope.py), hot and
# cold, with and without PDL, next to cuBLAS fp16, K = 4096 and 8192.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 300 python3 scripts/probe_gemv_slope.py --ks 4096,8192 --ns 2048,4096,7168,14336,28672,57344 \
  --out $OUT > $OUT/slope.log 2>&1; echo "slope rc=$?"; cat $OUT/slope.log | cut -c1-200
