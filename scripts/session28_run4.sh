#!/usr/bin/env bash
# Session 28, device run 4 (carried build): is the decode GEMV bound by each warp's copy latency? Runs 1-3: a
# quarter fewer instructions an item (the wide table) and a sixth fewer L1 wavefronts (x loaded by the lanes that
# use it) left 8B M = 1 at 13.0 us. With 2 ring stages a warp has one item in flight while it decodes, so if the
# copies' latency is longer than a decode, the warp waits. The unit-slot layout (8-warp CTAs, one pair table for
# two 4-warp slots) keeps 16 warps per SM with 3 stages (one CTA of 4 warps with its own table per 55 KB before).
# A/B at M = 1-4: the rule, unit slots at 2 / 3 / 4 stages, the wide table, one unit per CTA without the split.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s28; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,gateup,Q --ms 1,2,3,4 --k 4 \
  --settings 1:1,1:1:1:0:8:0:0:1:1:2,1:1:1:0:8:0:0:1:1:3,1:1:1:0:8:0:0:1:1:4,1:1:1:0:8:0:0:1:2,1:1:1:0:8:0:0:1:0 \
  --reps 3 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
timeout 240 python3 -m pytest tests/test_cuda_gemm.py -q -x -k "gemv" > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
