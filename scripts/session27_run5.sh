#!/usr/bin/env bash
# Session 27, device run 5 (carried build): the cluster split with its ranges precomputed by the launcher
# (run 4, Nsight Compute: 7.07M instructions against 6.34M plain on 8B at M = 1, ~345 more per warp, most of
# them 64-bit divisions before the first copies), and its rule (clusters of 2 from two rounds of tiles).
# The split against the plain kernel at M = 1-4 (never / the rule / clusters of 2 / 4), Nsight Compute on 8B
# M = 1 again, the GEMV tests and compute-sanitizer on the split cases.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 scripts/probe_gemv_launch.py \
  --shapes llama8b_gu,llama70b_gu,glm_shared_gu,gateup,O,KV --ms 1,2,3,4 \
  --settings 1:1:1:0:8:0:0,1:1,1:1:1:0:8:0:2,1:1:1:0:8:0:4 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log; tail -1 $R/gemv.log | cut -c1-300
SHAPES="l8b_plain: --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096 --split 0
l8b_split2: --op gemv_gemm --k 4 --M 1 --N 14336 --K 4096 --split 2" \
  KERNEL=scalar_gemv OUT=$R timeout 60 bash scripts/ncu_gemm.sh > $R/ncu-summary.log 2>&1
echo "ncu rc=$?"; grep -E "^== |Duration|Executed Instructions  |SM Active Cycles|Elapsed Cycles" $R/ncu_l8b_*.txt | cut -c1-150
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-split \
    > $R/sanitize_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|sanitize_cases' $R/sanitize_$tool.log | tail -2 | tr '\n' ' ')"
done
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
