#!/usr/bin/env bash
# Session 37, device run 3 (the tiled dequantize's 16-bit stores through stmatrix and a row tile in shared memory):
# the dequantize probe (Qwen3 Q / gate/up, Llama-3 8B gate/up), kbit.gemm where the dispatch takes dequantize +
# cuBLAS (M = 512 / 1024), the grouped GEMV's settings at 8 experts x 8 tokens (MoE down 0.97x of fp16 bmm in run 2),
# then the format tests, the dequantize + cuBLAS gemm tests and test_kernel_resources.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-3}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 scripts/probe_dequant_cublas.py --shapes Q,gateup,llama8b_gu --ms 512 2>&1 | grep -v -i warn > $R/probe-dequant.log
cat $R/probe-dequant.log | tail -8
timeout 90 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,gateup,down,llama8b_gu --ms 512,1024 --ks 2,4 \
  --out $R/big > $R/big.log 2>&1; echo "big rc=$?"
python3 scripts/ab_table.py s37=$R/big --path gemm | tail -16
timeout 60 python3 scripts/probe_grouped_schedule.py --shapes moe_dn,moe_gu --experts 8 --per-expert 8 \
  --settings 0:1,0:1:1,0:1:8:2,0:1:8:4,0:1:8:8,1:1 --reps 2 --out $R/grouped > $R/grouped.log 2>&1
echo "grouped rc=$?"; grep "^|" $R/grouped.log | cut -c1-220
timeout 200 python3 -m pytest tests/test_cuda_format.py tests/test_kernel_resources.py tests/test_layout.py \
  "tests/test_cuda_gemm.py::test_dequant_cublas_gemm_any_m" -q > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -12 | cut -c1-300
tar -czf $OUT/run${RUN:-3}.tar.gz -C $R .
