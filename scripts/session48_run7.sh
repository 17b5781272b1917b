#!/usr/bin/env bash
# Session 48, device run 7, on runs 5-9's build (de4f707's csrc: the final one but k = 5's 16-slot kernel): kbit.gemm
# against cuBLAS fp16 at k = 4 (session 47 run 6's command), then test_cuda_gemm.py whole and benchmarks/tests.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu_build.sh
start_device_run || exit 1
R=/tmp/r7; mkdir -p $R
timeout 230 python3 -m benchmarks.ab_paths --ops gemm --shapes Q,O,gateup,down,KV,glm_shared_gu,llama8b_gu,llama70b_gu \
  --ms 1,2,4,5,8,12,16,32,64 --ks 4 --out $R/gemm-k4 > $OUT/gemm-k4.log 2>&1; echo "gemm-k4 rc=$?"
python3 scripts/ab_table.py s48=$R/gemm-k4 --path gemm > $OUT/gemm-k4-table.md
cp $R/gemm-k4/ab-*.json $OUT/gemm-k4.json
timeout 330 python3 -m pytest tests/test_cuda_gemm.py benchmarks/tests -q > $OUT/tests-gemm.log 2>&1
echo "tests-gemm rc=$?"; grep -E "^FAILED|^E |passed|failed" $OUT/tests-gemm.log | head -12 | cut -c1-300
cat $OUT/gemm-k4-table.md
