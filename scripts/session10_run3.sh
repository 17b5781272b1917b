#!/usr/bin/env bash
# Session 10, device run 3: the GEMV's cross-warp sum without a CTA barrier (this tree) vs the
# barrier version (ab_branch): GEMV / grouped tests on this tree, then the same A/B in both.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
. scripts/gpu_build.sh
root=$(pwd); base=$(cd ab_branch && pwd)
AB="python3 -m benchmarks.ab_paths --ops gemv_gemm,mma_gemm --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,2,4 --ks 4"
build_tree "$root" "$OUT/build_new.log" || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv or grouped" 2>&1 | tee "$OUT/tests_gemv.log" | tail -3
(timeout 100 $AB --out "$OUT/new" > "$OUT/ab_new.log" 2>&1); grep -E "k=4 M" "$OUT/ab_new.log"
build_tree "$base" "$OUT/build_base.log" || exit 1
(cd "$base" && timeout 100 $AB --out "$OUT/base" > "$OUT/ab_base.log" 2>&1); grep -E "k=4 M" "$OUT/ab_base.log"
