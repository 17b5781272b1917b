#!/usr/bin/env bash
# Session 22, device run 5 (the tree to land): every GPU test file but test_cuda_gemm.py (run 4), and
# benchmarks/tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s22; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 500 python3 -m pytest tests benchmarks/tests -q --maxfail=10 --deselect tests/test_cuda_gemm.py \
  --ignore=tests/test_cuda_gemm.py > $R/tests-other.log 2>&1
tail -1 $R/tests-other.log; grep -E "^(FAILED|ERROR)" $R/tests-other.log | head -8
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
