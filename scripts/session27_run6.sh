#!/usr/bin/env bash
# Session 27, device run 6 (carried build): the cluster split under its final rule (clusters of 2 from two
# rounds of tiles). The GEMV and GEMM tests (tests/test_cuda_gemm.py), compute-sanitizer memcheck on the
# split cases; kbit.gemm against cuBLAS fp16 at M = 1-4 on the two Llama shapes and the Qwen3 gate/up for
# k = 2-5 (the numbers of record); the split against the plain kernel (probe_gemv_launch, k = 4, 5 rounds).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s27; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 100 python3 -m benchmarks.ab_paths --ops gemm --shapes gateup,glm_shared_gu,llama8b_gu,llama70b_gu --ms 1,2,3,4 \
  --ks 2,3,4,5 --out $R/gemm-ks > $R/gemm-ks.log 2>&1; echo "gemm-ks rc=$?"; grep "k=" $R/gemm-ks.log | tr -s ' ' | tr '\n' ';'; echo
timeout 100 python3 scripts/probe_gemv_launch.py --shapes llama8b_gu,llama70b_gu,glm_shared_gu --ms 1,2,3,4 \
  --settings 1:1:1:0:8:0:0,1:1 --reps 5 --out $R/gemv > $R/gemv.log 2>&1
echo "gemv rc=$?"; grep "^|" $R/gemv.log
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 99 python3 scripts/sanitize_cases.py cuda gemv-split \
  > $R/sanitize_memcheck.log 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY|sanitize_cases' $R/sanitize_memcheck.log | tail -2 | tr '\n' ' ')"
timeout 330 python3 -m pytest tests/test_cuda_gemm.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; tail -3 $R/tests.log | cut -c1-300
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
