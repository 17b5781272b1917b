#!/usr/bin/env bash
# Session 56, device run 1: the tiled dequantize and the fallback's epilogue launched with PDL. The PDL, format and
# fallback tests; compute-sanitizer on the tiled dequantize and the fallback's cases; then the fallback op and its
# dequantize alone with kbit's PDL off / on (scripts/probe_dequant_cublas.py --pdl-ab), three alternating rounds, on
# seven of #7's shapes at M = 768-4096, k = 4, fp16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q tests/test_dependent_launch.py tests/test_cuda_format.py \
  > $OUT/tests-pdl-format.log 2>&1; echo "tests pdl/format rc=$?"; tail -2 $OUT/tests-pdl-format.log | cut -c1-200
timeout 120 python3 -m pytest -q tests/test_cuda_gemm.py -k "dequant or cap" > $OUT/tests-fallback.log 2>&1
echo "tests fallback rc=$?"; tail -2 $OUT/tests-fallback.log | cut -c1-200
sanitize_run memcheck 60 dequant-tiled
sanitize_run memcheck 60 dequant-cublas
sanitize_run racecheck 90 dequant-tiled
timeout 240 python3 scripts/probe_dequant_cublas.py --shapes Q,O,down,gateup,KV,glm_shared_gu,llama8b_gu \
  --ms 768,1536,2048,4096 --pdl-ab 3 --json $OUT/pdl-ab.json > $OUT/pdl-ab.log 2>&1; echo "pdl-ab rc=$?"
cat $OUT/pdl-ab.log | grep -v Warning | cut -c1-260
