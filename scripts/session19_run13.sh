#!/usr/bin/env bash
# Session 19, device run 13 (carried build of 61c93b4: the L2 prefetch where x is staged, the table of
# 6491d85): kbit.gemm (the dispatcher) against cuBLAS fp16 on the dense shapes at M = 1-128 (k = 4, cold;
# the numbers of record), test_cuda_gemm.py whole; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=61c93b4
LOGS=/tmp/s19; R=$LOGS/r13; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1; grep "k=4" $R/gemm.log | tr -s ' ' | sed 's/ gemm//; s/k=4 //' | tr '\n' ';'; echo
timeout 250 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -2 $R/tests-cuda-gemm.log
tar -czf $OUT/run13.tar.gz -C $R .
