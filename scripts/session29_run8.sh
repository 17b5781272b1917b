#!/usr/bin/env bash
# Session 29, device run 8 (carried build): after the review's mends (the 8-slot x-resident decision made with the
# chooser's plan as before, then 4 warps per unit and 2 stages; grouped launches' item loop as in session 28). The
# rule's plans and times at M = 4, 8 against run 7; the GEMV and grouped (MoE) tests; memcheck on the unit-slot cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s29; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
timeout 40 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,glm_shared_gu,Q --ms 4,8,16 --k 4 \
  --settings 1:1 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
timeout 50 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-slots \
  > $R/sanitize_memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|sanitize_cases' $R/sanitize_memcheck.log | tail -2 | tr '\n' ' ')"
timeout 170 python3 -m pytest tests/test_cuda_gemm.py tests/test_moe_ops.py -q -k "gemv or moe or grouped" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
