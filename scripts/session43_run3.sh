#!/usr/bin/env bash
# Session 43, device run 3 (the final csrc: the split tail, the re-merged table with its bf16 column): test_cuda_gemm.py
# whole; kbit.gemm against cuBLAS at M = 192-4096 on the Qwen3, GLM shared and Llama-3 8B shapes, k = 4, fp16 and bf16.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 330 python3 -m pytest tests/test_cuda_gemm.py -q > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
SHAPES=KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu; MS=192,256,384,512,768,1024,1536,2048,3072,4096
gemm_records s43 $SHAPES $MS
