#!/usr/bin/env bash
# Session 38, device run 8 (f5b6917's csrc): test_grouped_gemv_shared_x's failure in run 7 with its traceback, then
# what run 7's first pytest did not reach before its timeout (test_kernel_resources, test_dependent_launch, test_nn,
# test_cuda_format). Logs straight into $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 -m pytest tests/test_cuda_gemm.py -q -x --tb=long -k "test_grouped_gemv_shared_x" > $R/tests-shx.log 2>&1
echo "shared_x rc=$?"; grep -E "^E |^>|passed|failed|Error" $R/tests-shx.log | head -30 | cut -c1-300
timeout 150 python3 -m pytest tests/test_kernel_resources.py tests/test_dependent_launch.py tests/test_nn.py \
  tests/test_cuda_format.py -q > $R/tests-rest.log 2>&1
echo "tests-rest rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests-rest.log | head -12 | cut -c1-300
