#!/usr/bin/env bash
# Session 52, device run 10, on the final csrc (the model's busiest cluster in closed form; the review's mends: the
# register pool's static_assert, comments and docstrings; every kernel's SASS that of runs 4-9's build): the plan and
# wgmma tests; the plan's and gemm_direct's host time under the rule and session 51's; the host cost per call at the
# small shapes (benchmarks.bench_dispatch).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 150 python3 -m pytest -q -x tests/test_cuda_gemm.py -k "wgmma" > $OUT/tests-wgmma.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-wgmma.log | head -8 | cut -c1-300
python3 scripts/probe_plan_host.py --shapes "160,4096,14336;320,4096,14336;640,2048,4096;160,2048,4096;1024,4096,14336" \
  > $OUT/plan-host.log 2>&1; echo "plan-host rc=$?"; grep -v Warn $OUT/plan-host.log
timeout 120 python3 -m benchmarks.bench_dispatch --out $OUT/dispatch > $OUT/dispatch.log 2>&1; echo "dispatch rc=$?"
grep "gemm_direct  \|kbit.gemm  \|F.linear" $OUT/dispatch.log | cut -c1-150
