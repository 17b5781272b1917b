#!/usr/bin/env bash
# Session 21, device run 9 (main + the grouped chunk-rows tuning aid; the GEMV kernels as main's): the
# gemm tests whole, the dependent-launch / opcheck tests and benchmarks/tests, then MoE decode over all
# experts with L2-hot offsets at 1 / 2 / 4 rows per chunk (scripts/probe_moe_sparse.py --hot-offsets).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
LOGS=/tmp/s21; R=$LOGS/r${RUN:-9}; mkdir -p $R; start_device_run || exit 1
timeout 230 python3 -m pytest tests/test_cuda_gemm.py -q --maxfail=10 > $R/tests-cuda-gemm.log 2>&1
tail -1 $R/tests-cuda-gemm.log; grep -E "^(FAILED|ERROR)" $R/tests-cuda-gemm.log | head -5
timeout 100 python3 -m pytest tests/test_dependent_launch.py tests/test_opcheck.py benchmarks/tests -q --maxfail=10 \
  > $R/tests-other.log 2>&1; tail -1 $R/tests-other.log; grep -E "^(FAILED|ERROR)" $R/tests-other.log | head -5
timeout 150 python3 scripts/probe_moe_sparse.py --experts 128,512 --active 8 --rows 1,2,4 --forms 2 --chunk-rows 0,2,4 \
  --hot-offsets --out $R/sparse-hot > $R/sparse-hot.log 2>&1; grep "^|" $R/sparse-hot.log; tail -3 $R/sparse-hot.log | grep -v "^|"
tar -czf $OUT/run${RUN:-9}.tar.gz -C $R .
