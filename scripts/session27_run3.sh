#!/usr/bin/env bash
# Session 27, device run 3 (carried build): the cluster split after its loop lost its 64-bit divisions (run 2:
# 15.1-16.9 us against 13.0 on 8B at M = 1, and ~1 us more on KV, whose steps are whole tiles). The split
# against the plain kernel with and without PDL (is the fixed cost the cluster launch's?), the split's tests
# and memcheck.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 scripts/probe_gemv_launch.py \
  --shapes llama8b_gu,llama70b_gu,KV,O,gateup,glm_shared_gu --ms 1,4 \
  --settings 1:1:1:0:8:0:0,1:1,1:1:1:0:8:0:2,1:1:1:0:8:0:4,1:1:1:0:8:0:0:0,1:1:1:0:8:0:4:0 --reps 3 \
  --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log; tail -2 $R/gemv.log | cut -c1-300
timeout 120 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "cluster_split or gemv_launch_plan" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -5 $R/tests.log | cut -c1-300
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-split \
  > $R/sanitize_memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|sanitize_cases' $R/sanitize_memcheck.log | tail -2 | tr '\n' ' ')"
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
