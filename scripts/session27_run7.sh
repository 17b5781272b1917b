#!/usr/bin/env bash
# Session 27, device run 7 (carried build of 93af06e's sources): the cluster split against the plain kernel at
# k = 2, 3 and 5 (run 6 compared k = 4 only in one run; its kbit.gemm at k = 2 read 70B M = 1 39.4 us against
# session 26's 38.1), M = 1-4 on the Llama shapes; the split's tests after the mend of their assertion.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
for k in 2 3 5; do
  timeout 100 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu --ms 1,2,3,4 --k $k \
    --settings 1:1:1:0:8:0:0,1:1 --reps 5 --out $R/gemv-k$k > $R/gemv-k$k.log 2>&1
  echo "gemv k=$k rc=$?"; grep "^|" $R/gemv-k$k.log
done
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q -k "cluster_split or gemv_launch_plan" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
