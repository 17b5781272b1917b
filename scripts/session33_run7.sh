#!/usr/bin/env bash
# Session 33, device run 7 (carried build: main with run 6's re-measured dispatch table): kbit.gemm against cuBLAS fp16
# (k = 4, eight shapes, M = 1-256; session 32 run 7's sweep), then test_cuda_gemm, dependent launch, nn, block and
# kernel resources.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s33; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,32,40,48,64,96,128,256 --ks 4 --out $R/gemm-k4 > $R/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py main=$R/gemm-k4 --path gemm > $R/gemm-k4-table.md
timeout 360 python3 -m pytest tests/test_cuda_gemm.py tests/test_dependent_launch.py tests/test_nn.py tests/test_block.py \
  tests/test_kernel_resources.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
