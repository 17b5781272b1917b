#!/usr/bin/env bash
# Session 28, device run 5 (carried build): run 4's unit-slot layout lost 12-15% against one unit per CTA at the same
# 16 warps per SM, while the wide layout (also unit slots, but 2 stages fixed) did not: the slot layout's ring
# stages were a runtime modulo per item (a reciprocal on the path to each stage's address). Now a warp steps its
# ring's fill and read offsets. The same A/B (layouts at M = 1-4; x resident forced where it fits, whose stages
# are runtime too), then the GEMV tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q --ms 1,2,3,4 --k 4 \
  --settings 1:1,1:1:1:0:8:0:0:1:1:2,1:1:1:0:8:0:0:1:1:3,1:1:1:0:8:0:0:1:2,1:1:1:0:8:0:0:1:0,1:1:2:0:8:0:0 \
  --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
