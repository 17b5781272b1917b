#!/usr/bin/env bash
# Session 49, device run 13 (the first of two calls on one warm machine): run 10 again, the earlier pass's sum now
# loaded at the unit's start: the x-resident GEMV's two passes over K at 8 token slots (TcGemmArgs::gemv_x_phases):
# the passes' tests, the x-resident and GEMV plan tests, then the build copied to ab_new/ for run 14 (the A/B against
# the final build without passes, ab_base/).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py \
  -k "x_resident_passes or x_resident or token_chunks or gemv_launch_plan" > $OUT/tests-passes.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-passes.log | head -8 | cut -c1-300
timeout 60 python3 scripts/probe_gemv_image.py --sizes 28672x8192,7168x8192 --ms 5,8 > $OUT/image.log 2>&1
grep -v "Warn\|_cuda_set_sync" $OUT/image.log | cut -c1-300
