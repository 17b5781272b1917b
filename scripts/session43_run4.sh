#!/usr/bin/env bash
# Session 43, device run 4 (run 3's build): every test file but test_cuda_gemm.py (run 3 ran it whole) and
# benchmarks/tests; compute-sanitizer memcheck on the wgmma split cases (with the split tail).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 420 python3 -m pytest $(other_test_files) benchmarks/tests -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 --num-cuda-barriers 100000 \
  python3 scripts/sanitize_cases.py cuda wgmma-splits > $OUT/memcheck-wgmma-splits.log 2>&1
echo "memcheck rc=$?"; tail -2 $OUT/memcheck-wgmma-splits.log | cut -c1-300
