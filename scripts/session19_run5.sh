#!/usr/bin/env bash
# Session 19, device run 5 (carried build of b671619: the wgmma kernel with the early loads and the
# 8 x 4 x-item map): the dispatch sweep (benchmarks.tune_dispatch; its table under $R/tune, copied
# into csrc/cuda/gemm/tc_dispatch_table.h on the CPU machine); tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s19; R=$LOGS/r5; mkdir -p $R/tune; start_device_run || exit 1
timeout 300 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1; tail -2 $R/tune.log | cut -c1-300
tar -czf $OUT/run5.tar.gz -C $R .
