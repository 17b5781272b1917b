#!/usr/bin/env bash
# Session 69, run 3: every test file but test_cuda_gemm.py (scripts/gpu_build.sh other_test_files: test_opcheck,
# test_fuzz, test_numerics, ... the slowest first) on the final build; the log lands in $OUT/run3.tar.xz.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
R=$(pwd)/r3; mkdir -p $R
timeout ${TESTS_LIMIT:-480} python3 -m pytest -q -rs -p no:cacheprovider $(other_test_files) > $R/tests-other.log 2>&1
echo "tests rc=$?"; grep -E "^(FAILED|ERROR)|passed|failed" $R/tests-other.log | tail -12 | cut -c1-300
tar -C $R -cJf $OUT/run3.tar.xz .
