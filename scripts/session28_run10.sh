#!/usr/bin/env bash
# Session 28, device run 10 (carried build): after the review's mends (the decode x-resident rule keyed on rows; the
# slot layouts' fallback to fewer stages and slots; comments; tests gated for GPUs with less shared memory). The
# GEMV tests, and the rule's A/B on 8B and 70B at M = 1-4 (against x staged) to check the plans and times held.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-10}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu --ms 1,2,3,4 --k 4 \
  --settings 1:1,1:1:0 --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q -k "gemv" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -6 | cut -c1-300
tar -czf $OUT/run${RUN:-10}.tar.gz -C $R .
