#!/usr/bin/env bash
# Session 43, device run 2: the dispatch table after the wgmma split tail, and its bf16 column. The fp16 sweep at M =
# 384-4096 (wgmma's times moved there; merged with the earlier runs), the bf16 sweep (wgmma against dequantize +
# cuBLAS with bf16 activations, M = 192-4096), each in two parts by shape (a timeout loses one part only). The
# dispatch tests first (bf16 queries, against the table of this build).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
R=${OUT:-out}/r${RUN:-2}; mkdir -p $R; start_device_run || exit 1
timeout 60 python3 -m pytest tests/test_cuda_gemm.py -q -k "dispatch_follows or prefill_m" > $OUT/tests.log 2>&1
echo "tests rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests.log | head -12 | cut -c1-300
QWEN=KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn; LLAMA=llama8b_gu,llama70b_gu
FP16_MS=384,512,768,1024,1536,2048,3072,4096; BF16_MS=192,256,384,512,768,1024,1536,2048,3072,4096
tune_sweep $R tune-qwen 150 --shapes $QWEN --ms $FP16_MS
tune_sweep $R tune-llama 120 --shapes $LLAMA --ms $FP16_MS
tune_sweep $R bf16-qwen 150 --dtype bfloat16 --shapes $QWEN --ms $BF16_MS
tune_sweep $R bf16-llama 120 --dtype bfloat16 --shapes $LLAMA --ms $BF16_MS
grep -hE "k=4 M=(1024|2048)" $R/tune-*.log $R/bf16-*.log | cut -c1-160
tar -czf $OUT/run${RUN:-2}-tune.tar.gz -C $R .
