#!/usr/bin/env bash
# Session 54, device runs 10 and 11 (11: after the reread mend, the plan's units computed once in gemm_wgmma), main's
# final builds (their kernels' SASS is runs 6-8's): the tests the review's mends added or changed (the stream-K kernel
# by name in the profiler, the plan with a cap below the token chunks) and the stream tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q tests/test_cuda_gemm.py -k "stream or launch_plan_shapes or remembered or aids" \
  > $OUT/tests-stream.log 2>&1
echo "stream tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-stream.log | head -8 | cut -c1-300
