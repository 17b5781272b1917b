#!/usr/bin/env bash
# Session 36, device run 7 (main's final build): where Llama-3 70B gate/up M = 1 lost 9% with layout version 4 - the
# GEMV's launch settings one at a time (cluster split, staged layout, unit warps, x resident), 8B as the control.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
python3 -c "import kbit; print('70B', kbit._C._gemv_launch_plan(1, 28672, 8192, 4, 'auto')); print('8B', kbit._C._gemv_launch_plan(1, 14336, 4096, 4, 'auto'))" > $R/plans.log 2>&1
cat $R/plans.log | cut -c1-600
timeout 200 python3 scripts/probe_gemv_launch.py --shapes llama70b_gu,llama8b_gu --ms 1 --reps 2 \
  --settings 1:0,1:0:1:0:8:0:0,1:0:1:0:8:0:2,1:0:1:0:8:0:4,1:0:1:0:8:0:8,1:0:1:0:8:0:-1:1:0,1:0:1:0:8:0:-1:1:1,1:0:1:0:8:0:-1:1:2,1:0:1:0:8:4,1:0:1:0:8:8,1:0:2 \
  --out $R > $R/probe.log 2>&1; echo "probe rc=$?"; tail -30 $R/probe.log | cut -c1-200
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
