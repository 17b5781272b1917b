#!/usr/bin/env bash
# Session 46, device run 5 (the final csrc: the dense x-staged GEMV's late PDL wait, the codebook by cp.async):
# test_cuda_gemm.py whole and benchmarks/tests; kbit.gemm against cuBLAS fp16 at k = 4, M = 1-64, session 39 run 5's
# shapes (its gemm-k4 command, M = 2 added).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
timeout 330 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
R=/tmp/r5; mkdir -p $R
timeout 170 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,2,4,8,16,32,64 --ks 4 --out $R/gemm-k4 > $OUT/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py s46=$R/gemm-k4 --path gemm > $OUT/gemm-k4-table.md
cp $R/gemm-k4/ab-*.json $OUT/gemm-k4.json
cat $OUT/gemm-k4-table.md
