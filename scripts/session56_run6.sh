#!/usr/bin/env bash
# Session 56, device run 6, on the final build (the review's mends: no L2 prefetch before the tiled dequantize's wait;
# the PDL tests with a capped-row chain in bf16): test_dependent_launch.py, test_cuda_format.py and the fallback's
# tests; compute-sanitizer on the tiled dequantize's and the fallback's cases; then the fallback with PDL off / on
# (scripts/probe_dequant_cublas.py --pdl-ab 3) on four shapes at M = 768 and 2048, k = 4, fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest -q tests/test_dependent_launch.py tests/test_cuda_format.py \
  > $OUT/tests-pdl-format.log 2>&1
echo "tests pdl/format rc=$?"; tail -2 $OUT/tests-pdl-format.log | cut -c1-200
timeout 60 python3 -m pytest -q tests/test_cuda_gemm.py -k "dequant or cap" > $OUT/tests-fallback.log 2>&1
echo "tests fallback rc=$?"; tail -2 $OUT/tests-fallback.log | cut -c1-200
sanitize_run memcheck 60 dequant-cublas
sanitize_run racecheck 60 dequant-tiled
timeout 120 python3 scripts/probe_dequant_cublas.py --shapes Q,KV,down,llama8b_gu --ms 768,2048 --pdl-ab 3 \
  --json $OUT/pdl-ab.json > $OUT/pdl-ab.log 2>&1; echo "pdl-ab rc=$?"
grep -v Warning $OUT/pdl-ab.log | cut -c1-250
