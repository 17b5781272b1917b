#!/usr/bin/env bash
# Session 52, device run 12, on the final csrc (the reread's mends: the clusters a plan runs at once in one helper,
# wgmma_clusters_at_once; the tuning aids' context in benchmarks.session, used by bench_dispatch and the probes; every
# kernel's SASS run 11's): the plan, dispatch, table, prefill and dequantize tests of test_cuda_gemm.py (the tiled
# dequantize changed after runs 7-8); the reworked host-time probe and bench_dispatch's entry above M = 128.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest -q tests/test_cuda_gemm.py -k "wgmma_plan_160 or wgmma_launch_plan or \
wgmma_persistent_rule or wgmma_rule or wgmma_split_tail_rule or dequant or dispatch or table or prefill" \
  > $OUT/tests-plan-dequant.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-plan-dequant.log | head -8 | cut -c1-300
python3 scripts/probe_plan_host.py --shapes "160,4096,14336;640,2048,4096" --reps 9 > $OUT/plan-host.log 2>&1
echo "plan-host rc=$?"; grep -v Warn $OUT/plan-host.log
timeout 60 python3 -m benchmarks.bench_dispatch --shapes "160,4096,14336" --reps 7 > $OUT/dispatch.log 2>&1
echo "dispatch rc=$?"; grep "gemm_direct" $OUT/dispatch.log | cut -c1-150
