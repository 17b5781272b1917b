#!/usr/bin/env bash
# Session 23, device run 6 (carried build: run 5's re-measured table, review mends in comments): kbit.gemm
# against cuBLAS fp16 on the GLM shared-expert shapes at M = 32-48 (the table's new wgmma start at 33), the
# wgmma and dispatch tests. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s23; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m benchmarks.ab_paths --ops gemm --shapes glm_shared_gu,glm_shared_dn --ms 32,33,40,48 --ks 4 \
  --out $R/gemm > $R/gemm.log 2>&1
grep "k=4" $R/gemm.log | tr -s ' ' | sed 's/ gemm//; s/k=4 //' | tr '\n' ';'; echo
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 -k "wgmma or dispatch or table" > $R/tests.log 2>&1
tail -1 $R/tests.log; grep -E "^(FAILED|ERROR)" $R/tests.log | head -8
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
