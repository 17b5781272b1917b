#!/usr/bin/env bash
# Session 52, device run 8, on the final csrc: every other test file.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 500 python3 -m pytest $(other_test_files) -q > $OUT/tests-other.log 2>&1
echo "tests-other rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-other.log | head -12 | cut -c1-300
