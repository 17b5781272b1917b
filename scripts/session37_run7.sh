#!/usr/bin/env bash
# Session 37, device run 7 (main's final csrc): kbit.gemm against cuBLAS fp16 (k = 4, the eight shapes, M = 1-256:
# the numbers of record), the dequantize probe, then test_cuda_gemm, test_kernel_resources, test_dependent_launch,
# test_nn and test_cuda_format.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-7}; mkdir -p $R; start_device_run || exit 1
timeout 170 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,4,8,16,32,40,48,64,96,128,256 --ks 4 --out $R/gemm-k4 > $R/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py s37=$R/gemm-k4 --path gemm > $R/gemm-k4-table.md
grep -E "^\| (llama|Q \| 4 \| (64|128)|gateup \| 4 \| (64|128)|O \| 4 \| (96|128)|down \| 4 \| (96|128))" $R/gemm-k4-table.md \
  | grep -E "\| (1|16|32|64|96|128) \|"
timeout 40 python3 scripts/probe_dequant_cublas.py --shapes Q,llama8b_gu --ms 64 2>&1 | grep -v -i warn > $R/probe-dequant.log
grep "M=" $R/probe-dequant.log
timeout 360 python3 -m pytest tests/test_cuda_gemm.py tests/test_kernel_resources.py tests/test_dependent_launch.py \
  tests/test_nn.py tests/test_cuda_format.py -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -20 | cut -c1-300
tar -czf $OUT/run${RUN:-7}.tar.gz -C $R .
