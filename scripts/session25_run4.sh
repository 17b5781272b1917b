#!/usr/bin/env bash
# Session 25, device run 4 (carried build of d927cc2): the dispatch table re-measured on the grid up to
# M = 1024 (benchmarks.tune_dispatch into $R/tune; above 128 only wgmma and dequantize + cuBLAS). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
mkdir -p $R/tune; timeout 540 python3 -m benchmarks.tune_dispatch --out $R/tune > $R/tune.log 2>&1
echo "rc=$?"; tail -2 $R/tune.log | cut -c1-300
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
