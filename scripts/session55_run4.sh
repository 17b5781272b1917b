#!/usr/bin/env bash
# Session 55, device run 4, on the build with the H200 table merged with run 3's sustained sweeps: the dispatch, table,
# prefill and dequantize tests; then kbit.gemm against cuBLAS fp16 in the sustained regime (ab_paths --sustain 0.3) on
# eight of #7's shapes at M = 256-4096, k = 4.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 200 python3 -m pytest -q -x tests/test_cuda_gemm.py benchmarks/tests -k "dispatch or table or prefill or dequant or timer" \
  > $OUT/tests-dispatch.log 2>&1; echo "tests rc=$?"; tail -2 $OUT/tests-dispatch.log | cut -c1-200
timeout 200 python3 -m benchmarks.ab_paths --ops gemm --sustain 0.3 --ks 4 \
  --shapes Q,KV,O,down,gateup,glm_shared_gu,llama8b_gu,llama70b_gu --ms 256,512,1024,1536,2048,3072,4096 \
  --out $OUT/gemm-sustained > $OUT/gemm-sustained.log 2>&1; echo "gemm rc=$?"
python3 scripts/ab_table.py "session55=$OUT/gemm-sustained" --path gemm > $OUT/gemm-sustained-table.md
cat $OUT/gemm-sustained-table.md | head -70
