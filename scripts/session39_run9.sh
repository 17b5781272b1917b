#!/usr/bin/env bash
# Session 39, device run 9 (the final build again): what run 8's two pytest calls did not reach before their timeouts
# (a slower machine: 92% and ~60%): test_kernel_resources, test_cuda_gemm's grouped tests (the file's tail, the code
# this session changed), test_moe_ops, test_nn.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; mkdir -p $OUT; start_device_run || exit 1
timeout 215 python3 -m pytest tests/test_kernel_resources.py tests/test_cuda_gemm.py tests/test_moe_ops.py tests/test_nn.py \
  -k "resources or spill or grouped or tuning_overrides or dispatch_follows or wrong_device or moe or Experts or nn or linear" \
  -q > $OUT/tests-c.log 2>&1
echo "tests-c rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-c.log | head -12 | cut -c1-300
