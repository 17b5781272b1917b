#!/usr/bin/env bash
# Session 10, device run 2: build, regenerate the dispatch table (tune_dispatch, per-shape rows),
# rebuild with it, then the dispatch tests and the dense decode shapes through kbit.gemm's paths.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
. scripts/gpu_build.sh
build_tree "$(pwd)" "$OUT/build.log" || exit 1
if tune_and_rebuild "$OUT/tune"; then
  timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "dispatch or table" 2>&1 | tail -3
fi
