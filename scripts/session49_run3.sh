#!/usr/bin/env bash
# Session 49, device run 3 (the first of two calls on one warm machine): y's tile of a whole wgmma unit out by bulk
# copies (the consumers go on to the next unit) and the dequantize's parts rule: the wgmma persistent / tile / split
# tests and the format tests, compute-sanitizer memcheck and racecheck on the persistent wgmma cases, then the build
# copied to ab_new/ for run 4 (the A/B against the base build, ab_base/).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py tests/test_cuda_format.py \
  -k "wgmma_gemm_persistent or wgmma_persistent_rule or y_tile or split_tail or dequant" > $OUT/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
sanitize_run memcheck 120 wgmma-persistent
sanitize_run racecheck 150 wgmma-persistent
