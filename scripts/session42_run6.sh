#!/usr/bin/env bash
# Session 42, device run 6 (the review's mends: bf16's row-scale cap 1, the cuBLAS wrapper's checks, the test at
# M = 200 and in bf16 again): test_cuda_gemm.py's fallback and dispatch tests, the fuzz and numerics tests, and
# compute-sanitizer memcheck / initcheck on the dequantize + cuBLAS cases, on the final epilogue.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; start_device_run || exit 1
timeout 300 python3 -m pytest tests/test_cuda_gemm.py tests/test_fuzz.py tests/test_numerics.py tests/test_opcheck.py \
  -q -k "dequant or dispatch or table or prefill or fuzz or numerics or opcheck" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
for tool in memcheck initcheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 scripts/sanitize_cases.py cuda dequant-cublas \
    > $OUT/$tool-dequant-cublas.log 2>&1; echo "$tool rc=$?"; tail -2 $OUT/$tool-dequant-cublas.log | cut -c1-300
done
python3 scripts/initcheck_known.py $OUT/initcheck-dequant-cublas.log; echo "initcheck_known rc=$?"
