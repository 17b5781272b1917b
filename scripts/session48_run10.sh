#!/usr/bin/env bash
# Session 48, device run 10: the final build (k = 5's 16-slot x-resident kernel back to main's; every other kernel's SASS
# the same as runs 7-9's build): the x-resident tests, then one round of gemv_gemm at k = 5 (run 8's regressed cells
# and their neighbours) and k = 4 (label final).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "x_resident or decode_x_resident or token_chunks" \
  > $OUT/tests-xres.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/tests-xres.log
timeout 100 python3 scripts/probe_wgmma_build_ab.py --op gemv_gemm --shapes gateup,glm_shared_gu,llama8b_gu \
  --ms 8,12,16 --ks 4,5 --label final --out $OUT/ab-final.json > $OUT/ab-final.log 2>&1; echo "probe rc=$?"
grep "^final" $OUT/ab-final.log
