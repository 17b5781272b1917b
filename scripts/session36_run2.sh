#!/usr/bin/env bash
# Session 36, device run 2 (v4 + the tiled dequantize's quad transpose + the GEMV's x a block ahead at 8+ tokens):
# the dequantize probe, kbit.gemm at the cells run 1 found slower (the GEMV at 8-128 tokens) and 70B
# M = 1, then the GEMV / tile / dequantize tests of test_cuda_gemm, test_cuda_format, test_dependent_launch, test_nn.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s36; R=$LOGS/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 scripts/probe_dequant_cublas.py --shapes Q,llama8b_gu --ms 64 2>&1 | grep -v -i warn > $R/probe-dequant.log
cut -c1-200 $R/probe-dequant.log
timeout 120 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,glm_shared_gu,KV,llama8b_gu,llama70b_gu \
  --ms 1,8,16,32,96,128 --ks 4 --out $R/gemm-k4 > $R/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py v4=$R/gemm-k4 --path gemm > $R/gemm-k4-table.md
timeout 360 python3 -m pytest tests/test_cuda_gemm.py -k "gemv or tile or dequant or reference or any_m or grouped" \
  tests/test_cuda_format.py tests/test_dependent_launch.py tests/test_nn.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -20 | cut -c1-300
tar -czf $OUT/run${RUN:-2}.tar.gz -C $R .
