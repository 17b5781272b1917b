#!/usr/bin/env bash
# Session 31, device run 12 (carried build: main's after the final read's mends: the tiled dequantize kernel's loads
# inlined, no change of behaviour): the dequantize, tiled and large-tensor tests, the fallback's, and the two probes
# (now on benchmarks/weights.shape_weight_copies) on one cell each.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
LOGS=/tmp/s31; R=$LOGS/r${RUN:-12}; mkdir -p $R; start_device_run || exit 1
timeout 120 python3 -m pytest tests/test_cuda_format.py tests/test_large_tensors.py tests/test_cuda_gemm.py -q \
  -k "dequant or tiled or large" > $R/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|passed|failed" $R/tests.log | tail -5 | cut -c1-300
timeout 60 python3 scripts/probe_wgmma_configs.py --shapes Q --ms 64 --row-tiles 0 --splits 0 --staging 0 2>&1 | grep -v -i warn | tee $R/probe-configs.log
timeout 60 python3 scripts/probe_dequant_cublas.py --shapes Q,llama8b_gu --ms 64 2>&1 | grep -v -i warn | tee $R/probe-dequant.log
tar -czf $OUT/run${RUN:-12}.tar.gz -C $R .
