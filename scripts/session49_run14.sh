#!/usr/bin/env bash
# Session 49, device run 14, on the final csrc (the review's mends: the next tile prefetched by a tile's first part
# only, kbit._C._dequant_parts, wider parts tests): the format tests, the fallback and dispatch tests, compute-sanitizer
# memcheck and racecheck on the tiled dequantize and memcheck on the fallback's cases, and the dequantize alone under
# the rule against whole tiles.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q tests/test_cuda_format.py > $OUT/tests-format.log 2>&1
echo "tests-format rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-format.log | head -8 | cut -c1-300
timeout 100 python3 -m pytest -q tests/test_cuda_gemm.py -k "dequant or dispatch or table or prefill" \
  > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -8 | cut -c1-300
sanitize_run memcheck 90 dequant-tiled
sanitize_run racecheck 90 dequant-tiled
sanitize_run memcheck 90 dequant-cublas
timeout 80 python3 scripts/probe_dequant_parts.py --shapes KV,Q,gateup --parts 0,1 --rounds 2 > $OUT/parts.log 2>&1
echo "parts rc=$?"; grep -v "Warn\|_cuda_set_sync" $OUT/parts.log | cut -c1-300
