#!/usr/bin/env bash
# Session 49, device run 6, on the final csrc (main's kernels + the tiled dequantize's parts rule): the dequantize alone
# and in the fallback at M = 2048 under the rule against whole tiles (parts 1); the tests of every file that runs the
# tiled dequantize or its aid; compute-sanitizer memcheck on the dequantize + cuBLAS cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 scripts/probe_dequant_parts.py --shapes KV,Q,O,gateup,down --ms 2048 --parts 0,1 --rounds 2 \
  > $OUT/parts.log 2>&1; echo "parts rc=$?"
grep -v "Warn\|_cuda_set_sync" $OUT/parts.log | cut -c1-300
timeout 300 python3 -m pytest -q tests/test_cuda_format.py tests/test_large_tensors.py tests/test_opcheck.py \
  tests/test_bad_input.py tests/test_layout.py > $OUT/tests-format.log 2>&1
echo "tests-format rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-format.log | head -8 | cut -c1-300
timeout 200 python3 -m pytest -q tests/test_cuda_gemm.py -k "dequant or dispatch or table or prefill" \
  > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -8 | cut -c1-300
sanitize_run memcheck 150 dequant-cublas
