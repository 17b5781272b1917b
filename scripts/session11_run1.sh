#!/usr/bin/env bash
# Session 11, device run 1: the GEMV's mma decode (pair table + mma.m16n8k16) vs its shuffle
# decode: GEMV / grouped tests with the default decode (mma for k <= 4), then an A/B of the
# decode (KBIT_GEMV_DECODE) and the warps per CTA (KBIT_GEMV_MAX_WARPS) against the small-M kernel.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
. scripts/gpu_build.sh
build_tree "$(pwd)" "$OUT/build.log" || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" 2>&1 | tee "$OUT/tests_gemv.log" | tail -3
AB="python3 -m benchmarks.ab_paths --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,2,4 --ks 4"
(KBIT_GEMV_DECODE=shuffle timeout 100 $AB --ops gemv_gemm,mma_gemm --out "$OUT/shuffle" > "$OUT/ab_shuffle.log" 2>&1); grep -E "k=4 M" "$OUT/ab_shuffle.log"
(KBIT_GEMV_DECODE=mma timeout 100 $AB --ops gemv_gemm --out "$OUT/mma16" > "$OUT/ab_mma16.log" 2>&1); grep -E "k=4 M" "$OUT/ab_mma16.log"
(KBIT_GEMV_DECODE=mma KBIT_GEMV_MAX_WARPS=8 timeout 100 $AB --ops gemv_gemm --out "$OUT/mma8" > "$OUT/ab_mma8.log" 2>&1); grep -E "k=4 M" "$OUT/ab_mma8.log"
