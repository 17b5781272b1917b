#!/usr/bin/env bash
# Session 49, device run 9, on the final csrc: does the x-resident GEMV slow down with its x image's size?
# (scripts/probe_gemv_image.py: the same bytes at K = 8192 and 4096, and Llama-3 8B gate/up, M = 1-16.)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 scripts/probe_gemv_image.py --sizes 28672x8192,57344x4096,14336x4096,7168x8192 \
  --ms 1,4,5,8,12,16 > $OUT/image.log 2>&1; echo "image rc=$?"
grep -v "Warn\|_cuda_set_sync" $OUT/image.log | cut -c1-300
