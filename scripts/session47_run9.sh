#!/usr/bin/env bash
# Session 47, device run 9 (the first of two calls on one warm machine): the x-resident GEMV at 1, 8 and 16 token slots
# with the late PDL wait (kLateWait, scalar_gemv.cuh) in the carried build. One round of gemv_gemm under the rule (label
# new0), the GEMV and PDL GPU tests, then the build copied to ab_new/ for run 10 (the A/B against run 6's build).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
SH=gateup,Q,glm_shared_gu,llama8b_gu,llama70b_gu; MS=1,4,8,16
timeout 100 python3 scripts/probe_wgmma_build_ab.py --op gemv_gemm --shapes $SH --ms $MS --label new0 \
  --out $OUT/ab-new0.json > $OUT/ab-new0.log 2>&1; echo "new0 rc=$?"
rm -rf ab_new && mkdir -p ab_new && cp -r kbit ab_new/ && echo "ab_new: $(ls ab_new/kbit | grep _C)"
timeout 300 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "gemv" tests/test_dependent_launch.py \
  > $OUT/tests-gemv.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/tests-gemv.log
