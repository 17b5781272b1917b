#!/usr/bin/env bash
# Session 50, device run 2 (the first of two calls on one warm machine): the wgmma kernel's producers prefetch each
# weight tile to L2 two groups before its copy (kWgPrefetchGroups). The wgmma tests and compute-sanitizer memcheck on
# the persistent wgmma cases on that build, then the build copied to ab_new/ for run 3 (the A/B against main's
# build, ab_base/).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 240 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma" > $OUT/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
sanitize_run memcheck 120 wgmma-persistent
