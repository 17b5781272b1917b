#!/usr/bin/env bash
# Session 47, device run 3 (the first of two calls on one warm machine): the x-resident GEMV's session 47 rules (8
# warps per unit at 8 token slots on K of 16+ groups or uneven 4-warp CTAs; CTAs of at most 8 warps at 16 slots, 2
# stages) in the carried build. One round of gemv_gemm under the rule (label new1) at M = 5-16, k = 2-5, then the
# GEMV's GPU tests, then the build copied to ab_new/ for run 4 (scripts/session47_run4.sh: the A/B against main's).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
SH=gateup,Q,O,glm_shared_gu,llama8b_gu,llama70b_gu; MS=5,8,12,16
timeout 150 python3 scripts/probe_wgmma_build_ab.py --op gemv_gemm --shapes $SH --ms $MS --ks 2,3,4,5 --label new1 \
  --out $OUT/ab-new1.json > $OUT/ab-new1.log 2>&1; echo "new1 rc=$?"
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 330 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "gemv" > $OUT/tests-gemv.log 2>&1; echo "tests rc=$?"
tail -3 $OUT/tests-gemv.log
