#!/usr/bin/env bash
# Session 43, device run 4 (run 3's build): every test file but test_cuda_gemm.py (run 3 ran it whole) and
# benchmarks/tests; compute-sanitizer memcheck on the wgmma split cases (with the split tail).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; start_device_run || exit 1
first="tests/test_fuzz.py tests/test_numerics.py tests/test_opcheck.py tests/test_quality.py tests/test_reference.py
  tests/test_large_tensors.py tests/test_integration_transformers.py tests/test_dependent_launch.py
  tests/test_cuda_format.py"
files="$first $(ls tests/test_*.py | grep -v "test_cuda_gemm\.py" | grep -vF "$(echo $first | tr ' ' '\n')")"
timeout 420 python3 -m pytest $files benchmarks/tests -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 --num-cuda-barriers 100000 \
  python3 scripts/sanitize_cases.py cuda wgmma-splits > $OUT/memcheck-wgmma-splits.log 2>&1
echo "memcheck rc=$?"; tail -2 $OUT/memcheck-wgmma-splits.log | cut -c1-300
