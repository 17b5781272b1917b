#!/usr/bin/env bash
# Session 52, device run 7, on the final csrc (the 160-token shape, the fitted rule, the H200 table merged with run 5's
# sweeps): test_cuda_gemm.py whole and benchmarks/tests; kbit.gemm against cuBLAS (fp16, bf16) at M = 136-1024 on
# nine shapes.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 330 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q -x > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
gemm_records s52 KV,Q,O,gateup,down,glm_shared_gu,glm_shared_dn,llama8b_gu,llama70b_gu 136,160,272,320,640,768,1024
