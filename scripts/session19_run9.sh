#!/usr/bin/env bash
# Session 19, device run 9 (carried build of a516251: the session's kernel, the run-5 table):
# kbit.gemm (the dispatcher) against cuBLAS fp16 on the dense shapes at M = 1-128 (k = 4, cold),
# the numbers of record; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=a516251
LOGS=/tmp/s19; R=$LOGS/r9; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1; grep "k=4" $R/gemm.log | tr -s ' ' | tr '\n' ';'; echo
tar -czf $OUT/run9.tar.gz -C $R .
