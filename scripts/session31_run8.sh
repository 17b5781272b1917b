#!/usr/bin/env bash
# Session 31, device run 8: the tiled dequantize kernel stored straight from registers (main's build) against the one
# before (the "shape" build of 2501219, carried as exp_variants/shape): scripts/probe_dequant_cublas.py on Qwen3 and
# Llama-3 sizes, each build twice; then the dequantize tests and the fallback's.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-8}; mkdir -p $R; start_device_run || exit 1
mkdir -p /tmp/v_shape && cp -r kbit /tmp/v_shape/ && xz -dc exp_variants/shape/_C.cpython-312-x86_64-linux-gnu.so.xz \
  > /tmp/v_shape/kbit/_C.cpython-312-x86_64-linux-gnu.so
for round in 1 2; do
  for label in shape main; do
    path=$(pwd); [ $label = shape ] && path=/tmp/v_shape:$(pwd)
    PYTHONPATH=$path timeout 120 python3 scripts/probe_dequant_cublas.py --shapes Q,gateup,down,llama8b_gu,llama70b_gu \
      --ms 64,1024 2>&1 | grep -v -i warn | tee $R/dequant-$round-$label.log
  done
done
timeout 200 python3 -m pytest tests/test_cuda_format.py tests/test_large_tensors.py tests/test_cuda_gemm.py -q \
  -k "dequant or tiled or large" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -8 | cut -c1-300
tar -czf $OUT/run${RUN:-8}.tar.gz -C $R .
