#!/usr/bin/env bash
# Session 61: the whole GPU suite on the final build, in two device calls (each within the 600 s limit):
#   PART a: tests/test_cuda_gemm.py and benchmarks/tests;  PART b: every other tests/ file.
# The log ($OUT/suite-PART.log) comes back with its skip reasons (-rs).
set -uo pipefail
cd "$(dirname "$0")/.."
PART=${1:?a or b}
. scripts/gpu_build.sh
start_device_run || exit 1
if [ "$PART" = a ]; then
  sel="tests/test_cuda_gemm.py benchmarks/tests"
else
  sel=$(ls tests/test_*.py | grep -v test_cuda_gemm.py | tr '\n' ' ')
fi
timeout 560 python3 -m pytest $sel -q --maxfail=20 -rs -p no:cacheprovider > "$OUT/suite-$PART.log" 2>&1
echo "suite $PART rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/suite-$PART.log" | tail -25 | cut -c1-300
