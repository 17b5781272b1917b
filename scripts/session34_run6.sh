#!/usr/bin/env bash
# Session 34, device run 6 (carried build: main, 1b4fe49): the dense GEMV's launch settings one at a time from the rule
# (scripts/probe_gemv_launch.py: unit warps, cluster split, staged layout and its stages, x resident and its ring
# stages, the spread, unit slots), Qwen3 gate/up (1.9x of cuBLAS at M = 1 against #5's 2.0x), Q, O, down at M = 1, 2, 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s34; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
S="1:1:1:0:8:0:-1:1:-1:0,1:1:1:0:8:2,1:1:1:0:8:4,1:1:1:0:8:8,1:1:1:0:8:0:0,1:1:1:0:8:0:2,1:1:1:0:8:0:4,1:1:1:0:8:0:8"
S="$S,1:1:1:0:8:0:-1:1:0,1:1:1:0:8:0:-1:1:1,1:1:1:0:8:0:-1:1:2,1:1:1:0:8:0:-1:1:1:3,1:1:0,1:1:2,1:1:1:2,1:1:1:3,1:1:1:4"
S="$S,1:0,1:1:1:0:1"
timeout 400 python3 scripts/probe_gemv_launch.py --shapes gateup,Q,O,down --ms 1,2,4 --settings "$S" --reps 3 \
  --baselines fp16 --out $R > $R/gemv.log 2>&1; echo "gemv rc=$?"; tail -40 $R/gemv.log | cut -c1-250
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
