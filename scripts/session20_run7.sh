#!/usr/bin/env bash
# Session 20, device run 7 (the carried build of run 6, 6b57f1d's sources): the whole GPU suite on the final
# kernels: test_cuda_gemm.py, then every other test file and benchmarks/tests; tarred into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s20; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=20 > $R/tests-cuda-gemm.log 2>&1; tail -1 $R/tests-cuda-gemm.log
timeout 340 python3 -m pytest tests benchmarks/tests -q --maxfail=20 -rs --ignore=tests/test_cuda_gemm.py \
  > $R/tests-rest.log 2>&1; tail -2 $R/tests-rest.log
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
