#!/usr/bin/env bash
# Session 11, device run 8: the review follow-ups (grouped_gemm_dispatch, GEMV tests that loop CTAs
# over units under the mma decode, the decode argument reaching the kernel): the GEMV, grouped,
# dispatch and opcheck tests.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}; mkdir -p "$OUT"
. scripts/gpu_build.sh
build_tree "$(pwd)" /tmp/build.log || exit 1
timeout 400 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py -q --maxfail=10 \
  -k "gemv or grouped or dispatch or table or opcheck or fake" 2>&1 | tee "$OUT/tests-review.log" | tail -5
