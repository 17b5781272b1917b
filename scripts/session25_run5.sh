#!/usr/bin/env bash
# Session 25, device run 5 (carried build: the lookup change and run 4's table, M up to 1024 on wgmma):
# kbit.gemm against cuBLAS fp16 at M = 1-1024 on every dense benchmark shape (the numbers of record); every
# test file and benchmarks/tests; memcheck on the wgmma cluster cases. Tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s25; R=$LOGS/r${RUN:-5}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,24,32,40,48,56,64,80,96,128,192,256,384,512,768,1024 --ks 4 --out $R/gemm > $R/gemm.log 2>&1
echo "gemm rc=$?"
timeout 380 python3 -m pytest tests benchmarks/tests -q --maxfail=10 > $R/tests-all.log 2>&1
tail -1 $R/tests-all.log; grep -E "^(FAILED|ERROR)" $R/tests-all.log | head -8
timeout 50 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda wgmma-splits > $R/sanitize-wgmma-memcheck.log 2>&1
echo "memcheck rc=$? $(grep -h "ERROR SUMMARY" $R/sanitize-wgmma-memcheck.log | tr '\n' ' ')"
tar -czf $OUT/run${RUN:-5}.tar.gz -C $R .
