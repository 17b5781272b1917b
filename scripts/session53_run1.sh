#!/usr/bin/env bash
# Session 53, device run 1: the remembered wgmma plan (remembered_plans.h; the GEMV's remembered plan on the same
# helper): the plan and remembered-plan tests, the host time of the plan and of gemm_direct (session 52 run 12's probe),
# then the plan grid (scripts/probe_wgmma_plan_grid.py: the rule against every plan the aids force, and cuBLAS) on the
# cells #7 still fails, then the GEMV tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 120 python3 -m pytest -q tests/test_cuda_gemm.py -k "remembered or wgmma_plan or wgmma_launch_plan or \
wgmma_persistent_rule or wgmma_rule or wgmma_split_tail_rule or wgmma_aids" > $OUT/tests-plan.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-plan.log | head -12 | cut -c1-300
python3 scripts/probe_plan_host.py --shapes "160,4096,14336;640,2048,4096" --reps 9 > $OUT/plan-host.log 2>&1
echo "plan-host rc=$?"; grep -v Warn $OUT/plan-host.log
timeout 300 python3 scripts/probe_wgmma_plan_grid.py --cells Q:136,272,768 gateup:136,272,1024 O:272,768 \
  down:272,768 llama8b_gu:272,768 KV:320,1024 --out $OUT/plan-grid.json > $OUT/plan-grid.log 2>&1
echo "grid rc=$?"; grep -v Warn $OUT/plan-grid.log | cut -c1-260
timeout 150 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "gemv" > $OUT/tests-gemv.log 2>&1
echo "gemv tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemv.log | head -8 | cut -c1-300
