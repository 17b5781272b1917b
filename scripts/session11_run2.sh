#!/usr/bin/env bash
# Session 11, device run 2: the GEMV mma decode's warps per CTA and ring stages (dense), and the
# decode per k (scripts/gemv_variants.py).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
. scripts/gpu_build.sh
build_tree "$(pwd)" "$OUT/build.log" || exit 1
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv_gemm_matches" 2>&1 | tail -2
export KBIT_GEMV_STAGES=3; timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv_gemm_matches and float16" 2>&1 | tail -2
export KBIT_GEMV_STAGES=4; timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv_gemm_matches and float16" 2>&1 | tail -2
unset KBIT_GEMV_STAGES
timeout 150 python3 scripts/gemv_variants.py --variants mma:16:2,mma:8:2,mma:4:2,mma:16:3,mma:8:3,mma:8:4,mma:4:4 \
  --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ks 4 --ms 1,4 --out "$OUT/warps-stages" 2>&1 | grep -v Warn
timeout 120 python3 scripts/gemv_variants.py --variants shuffle:16:2,mma:8:2,mma:8:3 \
  --shapes Q,gateup,llama8b_gu,llama70b_gu --ks 2,3,5 --ms 1,4 --out "$OUT/per-k" 2>&1 | grep -v Warn
