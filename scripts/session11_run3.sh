#!/usr/bin/env bash
# Session 11, device run 3: the mma decode without per-block exits on whole groups, at <= 128
# registers (2 CTAs of 8 warps per SM) or <= 80 (3 CTAs), vs the shuffle decode; the grouped GEMV
# with the mma decode vs the other grouped kernels (tune_grouped).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
. scripts/gpu_build.sh
build_tree "$(pwd)" "$OUT/build.log" || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" 2>&1 | tail -2
KBIT_GEMV_MINB=3 timeout 100 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv_gemm_matches and float16" 2>&1 | tail -2
timeout 150 python3 scripts/gemv_variants.py --variants shuffle:16:2,mma:8:2,mma:8:3,mma:4:2,mma:4:3 \
  --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ks 4 --ms 1,4 --out "$OUT/minb" 2>&1 | grep -v -i warn
timeout 100 python3 scripts/gemv_variants.py --variants mma:8:2,mma:8:3 --shapes Q,llama8b_gu,llama70b_gu --ks 2,3,5 --ms 1 \
  --out "$OUT/per-k" 2>&1 | grep -v -i warn
timeout 150 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,64,256 --per-expert 1,2,4 --out "$OUT/grouped" 2>&1 | tail -30
