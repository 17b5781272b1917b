#!/usr/bin/env bash
# Session 51, device run 4, on the final csrc (wgmma CTAs of 80-128 tokens, the balanced rule, the H200 table merged
# with run 3's sweeps): kbit.gemm against cuBLAS at M = 80-1024 on eight shapes, k = 4, fp16 and bf16; then
# test_cuda_gemm.py but its wgmma tests (run 3 ran those on the same kernels; the plan tests again) and benchmarks/tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
SHAPES=KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu; MS=80,96,128,160,192,256,288,384,512,768,1024
gemm_records s51 $SHAPES $MS
timeout 300 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q -k "not wgmma or wgmma_launch_plan" > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
