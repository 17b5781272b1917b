#!/usr/bin/env bash
# Session 44, device run 8 (run 7's build): every test file but test_cuda_gemm.py (run 7 ran it whole);
# compute-sanitizer memcheck on the wgmma split cases (with persistent CTAs, both first-stage modes).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 400 python3 -m pytest $(other_test_files) -q > $OUT/tests-b.log 2>&1
echo "tests-b rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-b.log | head -12 | cut -c1-300
SAN_TAIL=2 sanitize_run memcheck 100 wgmma-splits
