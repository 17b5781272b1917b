#!/usr/bin/env bash
# Session 48, device run 5 (the first of two calls on one warm machine): the 8-slot x-resident kernel's items stepped
# by adds (kStepItems) in the carried build: the x-resident tests, then the build copied to ab_new/ for run 6 (the A/B
# against run 3's build, now ab_base/).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "x_resident or decode_x_resident or token_chunks" \
  > $OUT/tests-xres.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/tests-xres.log
