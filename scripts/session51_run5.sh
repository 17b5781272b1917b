#!/usr/bin/env bash
# Session 51, device run 5, on run 4's build: every test file but test_cuda_gemm.py, the slowest first.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 500 python3 -m pytest -q $(other_test_files) > $OUT/tests-other.log 2>&1
echo "tests-other rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-other.log | head -12 | cut -c1-300
