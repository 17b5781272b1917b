#!/usr/bin/env bash
# Session 50, device run 8 (the first of two calls on one warm machine): the final wgmma kernel, its weight tiles with
# barriers of their own, released at the group's start, copied right after the previous group's x. The wgmma tests,
# compute-sanitizer memcheck and racecheck on the persistent cases and memcheck on the split cases, then the build
# copied to ab_new/ for run 9 (the A/B against main's build, ab_base/).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 240 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma" > $OUT/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
sanitize_run memcheck 120 wgmma-persistent
sanitize_run racecheck 200 wgmma-persistent
sanitize_run memcheck 150 wgmma-splits
