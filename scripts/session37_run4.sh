#!/usr/bin/env bash
# Session 37, device run 4 (the dequantize + cuBLAS path's row scales in cuBLASLt's epilogue): its tests (both forms,
# K = 16384 in bf16, the grouped path past 1024 experts), the dequantize probe with both forms at M = 1024-4096, and
# kbit.gemm against cuBLAS fp16 at M = 1024-4096 (M > 1024 takes the fallback on the H200's table).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s37; R=$LOGS/r${RUN:-4}; mkdir -p $R; start_device_run || exit 1
timeout 200 python3 -m pytest tests/test_cuda_gemm.py -k "dequant_cublas or grouped_gemm_rule or many_experts" -q \
  > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $R/tests.log | head -12 | cut -c1-300
timeout 150 python3 scripts/probe_dequant_cublas.py --shapes Q,gateup,down,llama8b_gu --ms 1024,2048,4096 2>&1 \
  | grep -v -i warn > $R/probe-dequant.log
cat $R/probe-dequant.log | grep "M="
timeout 150 python3 -m benchmarks.ab_paths --ops gemm --shapes KV,Q,O,gateup,down,llama8b_gu --ms 1024,2048,4096 --ks 4 \
  --out $R/big > $R/big.log 2>&1; echo "big rc=$?"
python3 scripts/ab_table.py s37=$R/big --path gemm | tail -18
tar -czf $OUT/run${RUN:-4}.tar.gz -C $R .
