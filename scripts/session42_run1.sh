#!/usr/bin/env bash
# Session 42, device run 1: the dequantize + cuBLAS fallback without its fp32 product (row scales folded into the
# dequantized W up to the dtype's cap, cuBLAS writing y in x's dtype). The fallback's tests; where its time goes now
# (probe_dequant_cublas, Qwen3 and Llama-3 8B shapes, M = 256-4096); the dispatch sweep at M = 192-4096 (every shape
# and k; two sweeps, as session 38's run 1), whose table the next build takes.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
export KBIT_BENCH_COMMIT=${KBIT_BENCH_COMMIT:-unknown}
OUT=${OUT:-out}; R=$OUT/r${RUN:-1}; mkdir -p $R; start_device_run || exit 1
timeout 150 python3 -m pytest tests/test_cuda_gemm.py tests/test_opcheck.py tests/test_cuda_format.py -q \
  -k "dequant or opcheck or tiled" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
timeout 150 python3 scripts/probe_dequant_cublas.py --shapes Q,gateup,O,down,KV,llama8b_gu --ms 256,512,1024,2048,4096 \
  > $OUT/probe-dqcublas.log 2>&1; echo "probe rc=$?"; cat $OUT/probe-dqcublas.log | cut -c1-220
MS=192,256,384,512,768,1024,1536,2048,3072,4096
timeout 200 python3 -m benchmarks.tune_dispatch --shapes KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn --ms $MS \
  --out $R/tune-qwen > $R/tune-qwen.log 2>&1; echo "tune-qwen rc=$?"
timeout 150 python3 -m benchmarks.tune_dispatch --shapes llama8b_gu,llama70b_gu --ms $MS \
  --out $R/tune-llama > $R/tune-llama.log 2>&1; echo "tune-llama rc=$?"
grep -hE "M=(512|1024|2048|4096)" $R/tune-qwen.log $R/tune-llama.log | grep "k=4" | cut -c1-200
tar -czf $OUT/run${RUN:-1}-tune.tar.gz -C $R .
