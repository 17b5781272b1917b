#!/usr/bin/env bash
# Session 10, device run 1: build the new tree, GEMV tests, A/B of the scalar GEMV against the
# base tree (ab_branch), grouped GEMV timings. Outputs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
. scripts/gpu_build.sh
root=$(pwd); base=$(cd ab_branch && pwd)
AB="python3 -m benchmarks.ab_paths --ops gemv_gemm,mma_gemm --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu --ms 1,2,4 --ks 4"
build_tree "$root" "$OUT/build_new.log" || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv or grouped" 2>&1 | tee "$OUT/tests_gemv.log" | tail -4
(timeout 100 $AB --out "$OUT/new" > "$OUT/ab_new.log" 2>&1); tail -25 "$OUT/ab_new.log"
(timeout 90 python3 -m benchmarks.tune_grouped --shapes moe_gu,moe_dn --experts 8,64,256 --per-expert 1,2,4,8 --out "$OUT/grouped" > "$OUT/grouped.log" 2>&1); tail -26 "$OUT/grouped.log"
build_tree "$base" "$OUT/build_base.log" || exit 1
(cd "$base" && timeout 100 $AB --out "$OUT/base" > "$OUT/ab_base.log" 2>&1); tail -25 "$OUT/ab_base.log"
