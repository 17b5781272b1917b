#!/usr/bin/env bash
# Session 24, device run 5 (carried build, run 4's: 5f5bec5): kbit.gemm against cuBLAS fp16 at M = 1-128 on
# every dense benchmark shape (the numbers of record). Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s24; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128 --ks 4 --out $R/gemm > $R/gemm.log 2>&1
grep "k=4" $R/gemm.log | tr -s ' ' | sed 's/ gemm//; s/k=4 //' | tr '\n' ';'; echo
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
