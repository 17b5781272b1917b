#!/usr/bin/env bash
# Session 48, device run 1 (the first of two calls on one warm machine): the x-resident GEMV whose x image joins the
# first item's commit group (1, 8 and 16 token slots; scalar_gemv.cuh, gemv_fill_x_image) in the carried build. The
# plan tests session 47's review mended (not run on the GPU then), the GEMV and PDL GPU tests, then the build copied
# to ab_new/ for run 2 (the A/B against main's build).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q tests/test_cuda_gemm.py -k "x_resident_plan or gemv_launch_plan" \
  > $OUT/tests-plan.log 2>&1; echo "plan tests rc=$?"; tail -2 $OUT/tests-plan.log
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 300 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "gemv" tests/test_dependent_launch.py \
  > $OUT/tests-gemv.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/tests-gemv.log
