#!/usr/bin/env bash
# Session 36, device run 6 (main: the final csrc, the H200's dispatch table re-tuned): kbit.gemm against cuBLAS fp16
# (k = 4, the eight shapes, M = 1-256: the numbers of record), then test_cuda_gemm, test_kernel_resources,
# test_dependent_launch and test_nn.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-6}; mkdir -p $R; start_device_run || exit 1
timeout 170 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,32,40,48,64,96,128,256 --ks 4 --out $R/gemm-k4 > $R/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py v4=$R/gemm-k4 --path gemm > $R/gemm-k4-table.md
timeout 400 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py tests/test_dependent_launch.py \
  tests/test_nn.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -20 | cut -c1-300
tar -czf $OUT/run${RUN:-6}.tar.gz -C $R .
