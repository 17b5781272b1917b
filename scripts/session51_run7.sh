#!/usr/bin/env bash
# Session 51, device run 7, on the final csrc (the review's mends: the tests force each chunk in the split cases and
# rebuild the rule's choice from both candidates, the sanitizer's persistent cases add 96 tokens, the fits check takes
# every shape; comments): the wgmma tests, the rule's plans with both candidates (KV and the shapes of runs 2 and 6),
# compute-sanitizer on the persistent and split cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma" > $OUT/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
python3 scripts/probe_wgmma_plans.py --shapes KV,Q,O,down,gateup,glm_shared_gu,glm_shared_dn,llama8b_gu \
  --ms 112,192,256,352,384,448,512,768 > $OUT/plans.log 2>&1; echo "plans rc=$?"; grep -A2 "^KV M=3[58]" $OUT/plans.log
sanitize_run memcheck 100 wgmma-persistent
sanitize_run racecheck 180 wgmma-persistent
sanitize_run memcheck 120 wgmma-splits
