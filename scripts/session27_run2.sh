#!/usr/bin/env bash
# Session 27, device run 2 (carried build): the dense GEMV's cluster split (scalar_gemv_split.cuh). The GEMV
# tests (the split's among them), compute-sanitizer on the split cases, then the split against the plain
# kernel (scripts/probe_gemv_launch.py: never / the rule / clusters of 2, 4, 8) at M = 1, 2, 4 on the
# benchmark shapes, and the launch plans.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 scripts/probe_gemv_launch.py \
  --shapes llama8b_gu,llama70b_gu,gateup,down,Q,O,KV,glm_shared_gu,glm_shared_dn --ms 1,2,4 \
  --settings 1:1:1:0:8:0:0,1:1,1:1:1:0:8:0:2,1:1:1:0:8:0:4,1:1:1:0:8:0:8 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log; tail -2 $R/gemv.log | cut -c1-300
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -5 $R/tests.log | cut -c1-300
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-split \
    > $R/sanitize_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize_$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
