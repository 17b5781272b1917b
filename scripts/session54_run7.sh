#!/usr/bin/env bash
# Session 54, device run 7, the final build (run 6's): the plan-keys test run 6 failed (the query's new "stream" key;
# the test now expects it), then every other test file (test_cuda_gemm.py ran whole in run 6).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 60 python3 -m pytest -q tests/test_cuda_gemm.py -k "launch_plan_shapes or stream_plan" > $OUT/tests-plan.log 2>&1
echo "plan tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-plan.log | head -4 | cut -c1-300
timeout 470 python3 -m pytest -q $(other_test_files) > $OUT/tests-other.log 2>&1
echo "other tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-other.log | head -8 | cut -c1-300
